/** The JSON Schema files in schemas/ are what the zod schemas give today (regenerate: npm run schemas). */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SCHEMA_DIR, jsonSchemas } from '../scripts/json-schemas';

describe('schemas/', () => {
  for (const [file, text] of Object.entries(jsonSchemas())) {
    it(`${file} is current`, () => {
      expect(readFileSync(join(SCHEMA_DIR, file), 'utf8'), `schemas/${file} is out of date: run npm run schemas`).toBe(text);
    });
  }
});

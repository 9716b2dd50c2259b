/**
 * A project on zod 3 (docs/package.md, "Requirements"): a tool whose schemas come from `zod/v4` of zod
 * 3.25+ (the v4 core) runs like a zod 4 one (the model sees its JSON Schema with descriptions,
 * a bad input is refused naming the field); a schema from zod 3's main export is refused when
 * the tool is defined, with one line naming zod 4, the installed zod and the field.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as zod3 from 'zod3';
import * as zod3v4 from 'zod3/v4';
import { defineAgent, defineTool } from '../src/define';
import { defineMiddleware } from '../src/middleware/define-middleware';
import { scriptedModel, textReply, toolCallReply } from '../src/models/scripted';
import { Registry } from '../src/registry';
import { installedZodVersion } from '../src/node/zod-version';
import { startTestWorker, type TestWorker } from './support/harness';
import { SOFT_TOOL_ERRORS_HINT } from '../src/workflows/run-status';

const ZOD3_VERSION = (JSON.parse(readFileSync(require.resolve('zod3/package.json'), 'utf8')) as { version: string }).version;

const seen: string[] = [];
const lookup = defineTool({
  name: 'lookup_city',
  description: 'Looks a city up.',
  // zod 3.25's v4 typings are not keel's zod 4 typings: the schemas are cast, their objects are what is tested.
  input: zod3v4.object({ city: zod3v4.string().min(2).describe('the city to look up') }) as never,
  output: zod3v4.object({ population: zod3v4.number() }) as never,
  run: ({ city }: { city: string }) => {
    seen.push(city);
    return { population: city.length * 1000 } as never;
  },
});

const registry = new Registry().add(lookup);
let worker: TestWorker;
beforeAll(async () => {
  worker = await startTestWorker(registry);
});
afterAll(async () => {
  await worker?.stop();
});

describe('zod 3 projects', () => {
  it('runs a tool whose schemas come from zod/v4 of zod 3.25+, its JSON Schema (descriptions included) sent to the model', async () => {
    // turn 1: lookup_city with a too-short city and with Lisbon: the short one is refused by the
    // zod/v4 schema, naming the field, which fails the run (no SoftToolErrors)
    const model = scriptedModel({
      name: 'scripted/zod3v4',
      script: [
        toolCallReply([
          { name: 'lookup_city', input: { city: 'L' } },
          { name: 'lookup_city', input: { city: 'Lisbon' } },
        ]),
        textReply('Lisbon has 6000 people.'),
      ],
    });
    registry.add(model, defineAgent({ name: 'zod3v4', model: model.name, tools: [lookup] }));
    const handle = await worker.client.start('zod3v4', 'How big is Lisbon?');
    const outcome = await handle.result().then(
      (result) => result.text,
      (error: Error) => error.message,
    );
    expect(model.requests[0]!.request.tools).toEqual([
      {
        name: 'lookup_city',
        description: 'Looks a city up.',
        inputSchema: {
          type: 'object',
          properties: { city: { type: 'string', minLength: 2, description: 'the city to look up' } },
          required: ['city'],
        },
        outputSchema: expect.objectContaining({ properties: { population: { type: 'number' } } }),
      },
    ]);
    expect(seen).toEqual(['Lisbon']);
    expect(outcome).toBe(`tool "lookup_city": invalid input: city: Too small: expected string to have >=2 characters; ${SOFT_TOOL_ERRORS_HINT}`);
  });

  it("refuses a tool whose input is a zod 3 schema, with one line naming zod 4 and the installed zod's version", () => {
    expect(ZOD3_VERSION).toMatch(/^3\.25\./);
    expect(installedZodVersion(`${__dirname}/..`), 'the repository itself is on zod 4').toMatch(/^4\./);
    const define = () => defineTool({ name: 'old_tool', description: '', input: zod3.object({ q: zod3.string() }) as never, run: () => 'x' });
    // From the repository root, the installed zod is keel's own zod 4: the line leaves the version out.
    expect(define).toThrow(new TypeError('keel needs zod 4 schemas (zod >= 4, or `zod/v4` from zod 3.25+); found a zod 3 schema for tool "old_tool".input'));
  });

  it('names the zod 3 version a project has installed', () => {
    // A project whose node_modules/zod is zod 3.25 (keel's test copy of it).
    const cwd = process.cwd();
    const project = mkdtempSync(join(tmpdir(), 'keel-zod3-'));
    writeFileSync(join(project, 'package.json'), '{"name":"zod3-project","private":true}');
    mkdirSync(join(project, 'node_modules'));
    symlinkSync(dirname(require.resolve('zod3/package.json')), join(project, 'node_modules', 'zod'));
    try {
      process.chdir(project);
      expect(installedZodVersion()).toBe(ZOD3_VERSION);
      expect(() =>
        defineTool({ name: 'old_tool', description: '', input: zod3v4.object({}) as never, output: zod3.string() as never, run: () => 'x' as never }),
      ).toThrow(`keel needs zod 4 schemas (zod >= 4, or \`zod/v4\` from zod 3.25+); found a zod 3 schema (zod ${ZOD3_VERSION}) for tool "old_tool".output`);
    } finally {
      process.chdir(cwd);
      rmSync(project, { recursive: true, force: true });
    }
  });

  it("refuses a middleware whose config schema or hold kind's schema is zod 3", () => {
    expect(() => defineMiddleware({ name: 'oldGate', description: '', configSchema: zod3.object({}) as never, create: () => ({}) })).toThrow(
      'keel needs zod 4 schemas (zod >= 4, or `zod/v4` from zod 3.25+); found a zod 3 schema for middleware "oldGate".configSchema',
    );
    expect(() =>
      defineMiddleware({
        name: 'oldHold',
        description: '',
        configSchema: zod3v4.object({}) as never,
        holds: [{ kind: 'ask', question: () => 'ok?', data: zod3v4.object({}) as never, decision: zod3.object({}) as never }],
        create: () => ({}),
      }),
    ).toThrow('found a zod 3 schema for middleware "oldHold" hold "ask".decision');
  });
});

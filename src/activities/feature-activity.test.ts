import { describe, expect, it } from 'vitest';
import type { Client } from '@temporalio/client';
import type { SigningKeys } from '../security/signing-keys';
import { filesDoor } from '../features/filesystem/files';
import { implementActivity } from './feature-activity';

/** The client and the keys are never reached: these calls fail or answer before any use of them. */
const dependencies = { client: null as unknown as Client, keys: () => null as unknown as SigningKeys };

describe('a feature activity behind its door', () => {
  it('refuses a forged input before the implementation runs, naming the activity and the field', async () => {
    let ran = false;
    const files = implementActivity(filesDoor, async () => {
      ran = true;
      return { kind: 'list' as const, entries: [] };
    });
    await expect(files.call({ op: 'read', root: '/', filePath: 7 }, dependencies)).rejects.toThrow(/^activity "files": invalid input: filePath/);
    await expect(files.call({ op: 'delete', root: '/' }, dependencies)).rejects.toThrow(/^activity "files": invalid input: op/);
    expect(ran).toBe(false);
  });

  it('gives the implementation the parsed input (defaults filled) and refuses an answer its door does not declare', async () => {
    const seen: unknown[] = [];
    const files = implementActivity(filesDoor, async (operation) => {
      seen.push(operation);
      return { kind: 'text', path: 'a.txt' } as never;
    });
    await expect(files.call({ op: 'read', root: '/', filePath: 'a.txt' }, dependencies)).rejects.toThrow(
      /^activity "files" answered what its door does not declare/,
    );
    expect(seen).toEqual([{ op: 'read', root: '/', filePath: 'a.txt', offset: 0, limit: 0 }]);
  });
});

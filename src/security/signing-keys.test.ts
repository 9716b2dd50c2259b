import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../config/load';
import { canonicalJson, loadSigningKeys, signingKeysOf } from './signing-keys';

const config = (dir: string, signingKeyFile = '.keel/signing-key') => ({ baseDir: dir, security: { signingKeyFile } });

describe('signing keys', () => {
  it('sign one value to one proof whatever its key order, and verify nothing else', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { f: 2, e: undefined }], c: null } })).toBe('{"a":{"c":null,"d":[1,{"f":2}]},"b":1}');
    const keys = signingKeysOf(['a secret of enough length'], 'test');
    const proof = keys.sign({ kind: 'task', taskId: 'bee:run-1/bee-1' });
    expect(proof).toMatch(/^v1\.[A-Za-z0-9_-]{43}$/);
    expect(keys.verify({ taskId: 'bee:run-1/bee-1', kind: 'task' }, proof)).toBe(true);
    expect(keys.verify({ kind: 'task', taskId: 'bee:run-2/bee-1' }, proof)).toBe(false);
    expect(keys.verify({ kind: 'task', taskId: 'bee:run-1/bee-1' }, `${proof.slice(0, -2)}AA`)).toBe(false);
    expect(keys.verify({ kind: 'task', taskId: 'bee:run-1/bee-1' }, 'v2.whatever')).toBe(false);
    expect(signingKeysOf(['another secret, as long'], 'other').verify({ kind: 'task', taskId: 'bee:run-1/bee-1' }, proof)).toBe(false);
  });

  it('take KEEL_SIGNING_KEY first: the first key signs, every key verifies (rotation)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'keel-keys-'));
    const old = loadSigningKeys(config(dir), { KEEL_SIGNING_KEY: 'the old key is long enough' });
    const both = loadSigningKeys(config(dir), { KEEL_SIGNING_KEY: 'the new key is long enough, the old key is long enough' });
    expect(both.source).toBe('KEEL_SIGNING_KEY');
    expect(both.verify({ n: 1 }, old.sign({ n: 1 }))).toBe(true);
    expect(old.verify({ n: 1 }, both.sign({ n: 1 }))).toBe(false);
    expect(() => loadSigningKeys(config(dir), { KEEL_SIGNING_KEY: 'short' })).toThrow(ConfigError);
    expect(() => loadSigningKeys(config(dir), { KEEL_SIGNING_KEY: 'short' })).toThrow(/at least 16 characters/);
  });

  it('create the key file once, readable by its owner only, and read it after', () => {
    const dir = mkdtempSync(join(tmpdir(), 'keel-keys-'));
    const first = loadSigningKeys(config(dir), {});
    expect(first.created).toBe(true);
    const path = join(dir, '.keel', 'signing-key');
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readFileSync(path, 'utf8').trim()).toMatch(/^[0-9a-f]{64}$/);
    const second = loadSigningKeys(config(dir), {});
    expect(second.created).toBe(false);
    expect(second.verify({ n: 1 }, first.sign({ n: 1 }))).toBe(true);
    writeFileSync(join(dir, 'weak'), 'abc\n');
    expect(() => loadSigningKeys(config(dir, 'weak'), {})).toThrow(/holds a key of 3 characters/);
    // A directory that cannot be made (a file stands where it would go).
    expect(() => loadSigningKeys(config(dir, 'weak/keys/key'), {})).toThrow(/cannot read .*weak\/keys\/key: .*; or set KEEL_SIGNING_KEY/);
  });
});

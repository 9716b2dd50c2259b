import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { defaultPayloadConverter } from '@temporalio/common';
import { ConfigError } from '../config/load';
import { UNOPENED_ENCODING } from '../core/undecodable';
import { EncryptionCodec, KEY_ID_METADATA, loadEncryptionKeys, parseKey } from './encryption';

const text = (bytes: Uint8Array | null | undefined) => new TextDecoder().decode(bytes ?? new Uint8Array());
const keyA = randomBytes(32);
const keyB = randomBytes(32);

describe('EncryptionCodec', () => {
  const plain = defaultPayloadConverter.toPayload({ prompt: 'the secret plan' });

  it('seals a payload whole (metadata included) and opens it again', async () => {
    const codec = new EncryptionCodec('a', new Map([['a', keyA]]));
    const [sealed] = await codec.encode([plain]);
    expect(text(sealed!.metadata!.encoding)).toBe('binary/encrypted');
    expect(text(sealed!.metadata![KEY_ID_METADATA])).toBe('a');
    expect(Object.keys(sealed!.metadata!).sort()).toEqual(['encoding', 'encryption-cipher', 'encryption-key-id']);
    expect(Buffer.from(sealed!.data!).toString('latin1')).not.toContain('secret');
    const [opened] = await codec.decode([sealed!]);
    expect(defaultPayloadConverter.fromPayload(opened!)).toEqual({ prompt: 'the secret plan' });
    // A fresh IV each time: the same value never seals to the same bytes.
    const [again] = await codec.encode([plain]);
    expect(Buffer.from(again!.data!).equals(Buffer.from(sealed!.data!))).toBe(false);
  });

  it('opens what an older key sealed after a rotation, and names a key it does not have', async () => {
    const [sealedA] = await new EncryptionCodec('a', new Map([['a', keyA]])).encode([plain]);
    const rotated = new EncryptionCodec(
      'b',
      new Map([
        ['b', keyB],
        ['a', keyA],
      ]),
    );
    expect(defaultPayloadConverter.fromPayload((await rotated.decode([sealedA!]))[0]!)).toEqual({ prompt: 'the secret plan' });
    expect(text((await rotated.encode([plain]))[0]!.metadata![KEY_ID_METADATA])).toBe('b');
    await expect(new EncryptionCodec('b', new Map([['b', keyB]])).decode([sealedA!])).rejects.toThrow(
      'a payload is encrypted with key "a", which this process does not have (encryption.keys: b); add that key to decrypt it',
    );
  });

  it('refuses altered ciphertext, a relabelled key id and a wrong key under the right id', async () => {
    const codec = new EncryptionCodec(
      'a',
      new Map([
        ['a', keyA],
        ['b', keyB],
      ]),
    );
    const [sealed] = await codec.encode([plain]);
    const flipped = Buffer.from(sealed!.data!);
    flipped[20]! ^= 1;
    await expect(codec.decode([{ ...sealed!, data: flipped }])).rejects.toThrow('a payload encrypted with key "a" does not verify');
    const relabelled = { ...sealed!, metadata: { ...sealed!.metadata, [KEY_ID_METADATA]: new TextEncoder().encode('b') } };
    await expect(codec.decode([relabelled])).rejects.toThrow('a payload encrypted with key "b" does not verify');
    await expect(new EncryptionCodec('a', new Map([['a', keyB]])).decode([sealed!])).rejects.toThrow('does not verify');
  });

  it("in a worker, hands a workflow's own payload it cannot open back marked, and still throws for an activity's", async () => {
    const [sealedA] = await new EncryptionCodec('a', new Map([['a', keyA]])).encode([plain]);
    const worker = new EncryptionCodec('b', new Map([['b', keyB]]), { unopenable: 'mark' });
    const own = { type: 'workflow', namespace: 'default', workflowId: 'r1' } as const;
    const [marked] = await worker.decode([sealedA!], own);
    expect(text(marked!.metadata!.encoding)).toBe(UNOPENED_ENCODING);
    expect(text(marked!.data)).toBe('a payload is encrypted with key "a", which this process does not have (encryption.keys: b); add that key to decrypt it');
    const flipped = Buffer.from(sealedA!.data!);
    flipped[20]! ^= 1;
    const [garbage] = await new EncryptionCodec('a', new Map([['a', keyA]]), { unopenable: 'mark' }).decode([{ ...sealedA!, data: flipped }], own);
    expect(text(garbage!.data)).toContain('does not verify');
    const activity = { type: 'activity', namespace: 'default', workflowId: 'r1', activityId: '1', isLocal: false } as const;
    await expect(worker.decode([sealedA!], activity)).rejects.toThrow('which this process does not have');
    await expect(worker.decode([sealedA!])).rejects.toThrow('which this process does not have');
  });

  it('passes payloads that are not encrypted through (written before encryption was on)', async () => {
    const codec = new EncryptionCodec('a', new Map([['a', keyA]]));
    expect(await codec.decode([plain])).toEqual([plain]);
  });
});

describe('encryption keys', () => {
  it('reads base64 and hex keys of 32 bytes, and refuses others naming where they came from', () => {
    expect(parseKey(keyA.toString('base64'), 'k')).toEqual(keyA);
    expect(parseKey(`${keyA.toString('hex')}\n`, 'k')).toEqual(keyA);
    expect(() => parseKey('c2hvcnQ=', 'encryption.keys.a ($X)')).toThrow(
      new ConfigError('encryption.keys.a ($X): an encryption key must be 32 bytes, base64 or hex (openssl rand -base64 32); this one is 5 bytes'),
    );
    const { active, keys } = loadEncryptionKeys({ key: 'a', keys: { a: { env: 'K' } } }, '/', { K: keyA.toString('base64') });
    expect(active).toBe('a');
    expect(keys.get('a')).toEqual(keyA);
    expect(() => loadEncryptionKeys({ key: 'a', keys: { a: { env: 'K' } } }, '/', {})).toThrow('encryption.keys.a: the environment variable K is not set');
  });
});

/**
 * Payload encryption: a Temporal PayloadCodec with AES-256-GCM (Node's crypto). Every payload a
 * keel process sends (run inputs, results, activity inputs and outputs, memos, signals, updates,
 * queries) is encrypted whole: the original payload, metadata included, is serialized and
 * sealed, and the encrypted payload carries only the key id and the cipher in its metadata. The
 * SDK encodes with the codec before External Storage offloads a payload, so what the payload
 * store holds is ciphertext too.
 *
 * Keys have ids (`encryption.keys` in temporal.yaml); `encryption.key` names the one new payloads
 * are sealed with, and every listed key still opens what it sealed, so a rotation keeps old runs
 * readable. A payload sealed with a key this process lacks fails, naming the key id. Payloads that
 * are not encrypted (written before encryption was turned on) pass through unchanged. Node side.
 */
import type { Payload, PayloadCodec, SerializationContext } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { ConfigError } from '../config/load';
import type { KeelConfig } from '../config/schema';
import { UNOPENED_ENCODING } from '../core/undecodable';

/** The `encoding` of an encrypted payload's metadata. */
export const ENCRYPTED_ENCODING = 'binary/encrypted';
/** Metadata keys of an encrypted payload. */
export const KEY_ID_METADATA = 'encryption-key-id';
export const CIPHER_METADATA = 'encryption-cipher';
const CIPHER = 'AES256GCM';
const IV_BYTES = 12;
const TAG_BYTES = 16;

const PayloadProto = temporal.api.common.v1.Payload;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A failure to open a payload: the key it names is missing, or the ciphertext does not verify. */
export class PayloadDecryptionError extends Error {
  override readonly name = 'PayloadDecryptionError';
}

/** Reads a 32-byte key written as base64 or hex; `where` names its source in errors. */
export function parseKey(text: string, where: string): Buffer {
  const trimmed = text.trim();
  const bytes = /^[0-9a-fA-F]{64}$/.test(trimmed) ? Buffer.from(trimmed, 'hex') : Buffer.from(trimmed, 'base64');
  if (bytes.length !== 32)
    throw new ConfigError(`${where}: an encryption key must be 32 bytes, base64 or hex (openssl rand -base64 32); this one is ${bytes.length} bytes`);
  return bytes;
}

/** The keys of the config's `encryption`, read from their variables and files. */
export function loadEncryptionKeys(
  encryption: NonNullable<KeelConfig['encryption']>,
  baseDir: string,
  env: NodeJS.ProcessEnv = process.env,
): { active: string; keys: Map<string, Buffer> } {
  const keys = new Map<string, Buffer>();
  for (const [id, source] of Object.entries(encryption.keys)) {
    const where = `encryption.keys.${id}`;
    if ('env' in source) {
      const value = env[source.env];
      if (!value) throw new ConfigError(`${where}: the environment variable ${source.env} is not set`);
      keys.set(id, parseKey(value, `${where} ($${source.env})`));
    } else {
      const path = resolve(baseDir, source.file);
      let text: string;
      try {
        text = readFileSync(path, 'utf8');
      } catch (error) {
        throw new ConfigError(`${where}: cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
      }
      keys.set(id, parseKey(text, `${where} (${path})`));
    }
  }
  return { active: encryption.key, keys };
}

/** How a codec answers a sealed payload it cannot open. */
export interface EncryptionCodecOptions {
  /**
   * `throw` (clients, the codec server): fail, naming the key. `mark` (workers and replayers):
   * a payload of a workflow's own (its input, a signal, an update; not an activity's) comes back
   * as `UNOPENED_ENCODING` carrying the reason, so the workflow refuses a signal or update it
   * cannot open instead of failing every task of the run; keel's workflows still wait for a
   * worker with the key when it is their input (`requireOpened`). Default `throw`.
   */
  unopenable?: 'throw' | 'mark';
}

/** The codec: seals with the active key, opens with any key it has. */
export class EncryptionCodec implements PayloadCodec {
  private readonly unopenable: 'throw' | 'mark';

  constructor(
    private readonly active: string,
    private readonly keys: ReadonlyMap<string, Buffer>,
    { unopenable = 'throw' }: EncryptionCodecOptions = {},
  ) {
    if (!keys.has(active)) throw new ConfigError(`encryption.key: "${active}" is not one of keys`);
    this.unopenable = unopenable;
  }

  // Async, so a payload that cannot be opened rejects the promise the SDK awaits rather than throwing past it.
  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => this.seal(payload));
  }

  async decode(payloads: Payload[], context?: SerializationContext): Promise<Payload[]> {
    // Activity payloads (a task's input, or its result inside an activation) always throw: the
    // attempt or the workflow task fails and is retried, by a worker with the key.
    const mark = this.unopenable === 'mark' && context?.type === 'workflow';
    return payloads.map((payload) => {
      if (!mark) return this.open(payload);
      try {
        return this.open(payload);
      } catch (error) {
        if (!(error instanceof PayloadDecryptionError)) throw error;
        return { metadata: { encoding: encoder.encode(UNOPENED_ENCODING) }, data: encoder.encode(error.message) };
      }
    });
  }

  private seal(payload: Payload): Payload {
    const key = this.keys.get(this.active)!;
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    // The key id is bound to the ciphertext: a payload relabelled with another id does not open.
    cipher.setAAD(encoder.encode(this.active));
    const sealed = Buffer.concat([iv, cipher.update(PayloadProto.encode(payload).finish()), cipher.final(), cipher.getAuthTag()]);
    return {
      metadata: { encoding: encoder.encode(ENCRYPTED_ENCODING), [KEY_ID_METADATA]: encoder.encode(this.active), [CIPHER_METADATA]: encoder.encode(CIPHER) },
      data: sealed,
    };
  }

  private open(payload: Payload): Payload {
    const metadata = payload.metadata ?? {};
    if (!metadata.encoding || decoder.decode(metadata.encoding) !== ENCRYPTED_ENCODING) return payload;
    const id = metadata[KEY_ID_METADATA] ? decoder.decode(metadata[KEY_ID_METADATA]) : '';
    const cipherName = metadata[CIPHER_METADATA] ? decoder.decode(metadata[CIPHER_METADATA]) : '';
    if (cipherName !== CIPHER) throw new PayloadDecryptionError(`a payload is encrypted with cipher "${cipherName}", which keel does not know (${CIPHER})`);
    const key = this.keys.get(id);
    if (!key)
      throw new PayloadDecryptionError(
        `a payload is encrypted with key "${id}", which this process does not have (encryption.keys: ${[...this.keys.keys()].join(', ')}); add that key to decrypt it`,
      );
    const data = payload.data ?? new Uint8Array();
    if (data.length < IV_BYTES + TAG_BYTES) throw new PayloadDecryptionError(`a payload encrypted with key "${id}" is too short to be one`);
    const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, IV_BYTES));
    decipher.setAAD(encoder.encode(id));
    decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
    let plain: Buffer;
    try {
      plain = Buffer.concat([decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)), decipher.final()]);
    } catch {
      throw new PayloadDecryptionError(
        `a payload encrypted with key "${id}" does not verify: it was altered, or key "${id}" here is not the key that sealed it`,
      );
    }
    let decoded: ReturnType<typeof PayloadProto.decode>;
    try {
      decoded = PayloadProto.decode(plain);
    } catch {
      throw new PayloadDecryptionError(`a payload encrypted with key "${id}" opens to bytes that are not a payload`);
    }
    return { metadata: decoded.metadata, data: decoded.data };
  }
}

/** The codec of the config's `encryption`, or undefined when it is off. */
export function encryptionCodec(
  config: Pick<KeelConfig, 'encryption' | 'baseDir'>,
  { env = process.env, ...options }: EncryptionCodecOptions & { env?: NodeJS.ProcessEnv } = {},
): EncryptionCodec | undefined {
  if (!config.encryption) return undefined;
  const { active, keys } = loadEncryptionKeys(config.encryption, config.baseDir, env);
  return new EncryptionCodec(active, keys, options);
}

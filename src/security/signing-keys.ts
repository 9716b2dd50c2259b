/**
 * The keys workers sign proofs with (src/core/proofs.ts says what is signed). A proof is an
 * HMAC-SHA256 of the subject's canonical JSON: nobody without the key can make one, so a client
 * cannot forge a hold or plant another conversation's task id. Every worker that may resume a
 * run, or read a task, started on another worker needs the same key:
 * - `KEEL_SIGNING_KEY`: one or more secrets separated by commas; the first signs, every one
 *   verifies (to rotate, put the new key first and drop the old one once nothing signed with it
 *   is still to be resumed);
 * - otherwise the file `security.signingKeyFile` (default `.keel/signing-key`, relative to the
 *   config file), created with a random key on first use (mode 0600), which suits workers on one
 *   machine.
 * Node side.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmodSync, linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { KeelConfig } from '../config/schema';
import { ConfigError } from '../config/load';

/** Version prefix of a proof, so a later scheme can tell its own apart. */
const PROOF_VERSION = 'v1';
/** The shortest secret accepted from KEEL_SIGNING_KEY. */
const MIN_SECRET_CHARS = 16;

/** Signs and verifies proofs. */
export interface SigningKeys {
  /** A proof of `subject` (a JSON value) with the current key. */
  sign(subject: unknown): string;
  /** True when `proof` is a proof of `subject` under any of the keys. */
  verify(subject: unknown, proof: string): boolean;
  /** Where the keys came from, for messages ("KEEL_SIGNING_KEY" or the file's path). */
  readonly source: string;
  /** True when this call created the key file (a new random key). */
  readonly created?: boolean;
}

/** JSON with object keys sorted, so one value always signs to one text. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value ?? null);
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item === undefined ? null : item)).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, item]) => item !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(',')}}`;
}

/** Signing keys from secrets (the first signs). */
export function signingKeysOf(secrets: readonly string[], source: string): SigningKeys {
  if (secrets.length === 0) throw new ConfigError(`${source}: no signing key given`);
  const mac = (secret: string, subject: unknown) => createHmac('sha256', secret).update(canonicalJson(subject)).digest();
  return {
    source,
    sign: (subject) => `${PROOF_VERSION}.${mac(secrets[0]!, subject).toString('base64url')}`,
    verify(subject, proof) {
      if (typeof proof !== 'string' || !proof.startsWith(`${PROOF_VERSION}.`)) return false;
      const given = Buffer.from(proof.slice(PROOF_VERSION.length + 1), 'base64url');
      return secrets.some((secret) => {
        const expected = mac(secret, subject);
        return given.length === expected.length && timingSafeEqual(given, expected);
      });
    },
  };
}

/** Reads the key file, creating it with a fresh random key when there is none (two workers racing: one writes, both read). */
function keyFromFile(path: string): { secret: string; created: boolean } {
  try {
    return { secret: readFileSync(path, 'utf8').trim(), created: false };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT')
      throw new ConfigError(`security.signingKeyFile: cannot read ${path}: ${(error as Error).message}; or set KEEL_SIGNING_KEY`);
  }
  // Written whole to a file of its own, then linked into place: a worker that starts at the same
  // moment either links first or reads the complete key, never an empty file.
  let created = false;
  const temporary = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(temporary, `${randomBytes(32).toString('hex')}\n`, { flag: 'wx', mode: 0o600 });
    chmodSync(temporary, 0o600);
    linkSync(temporary, path);
    created = true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') {
      throw new ConfigError(
        `security.signingKeyFile: cannot create ${path}: ${(error as Error).message}; set KEEL_SIGNING_KEY instead (e.g. openssl rand -hex 32), the same on every worker`,
      );
    }
  } finally {
    rmSync(temporary, { force: true });
  }
  return { secret: readFileSync(path, 'utf8').trim(), created };
}

/** The signing keys of a worker: from KEEL_SIGNING_KEY, or the config's key file. */
export function loadSigningKeys(config: Pick<KeelConfig, 'security' | 'baseDir'>, env: NodeJS.ProcessEnv = process.env): SigningKeys {
  const fromEnv = env.KEEL_SIGNING_KEY;
  if (fromEnv !== undefined && fromEnv.trim() !== '') {
    const secrets = fromEnv
      .split(',')
      .map((secret) => secret.trim())
      .filter(Boolean);
    const short = secrets.find((secret) => secret.length < MIN_SECRET_CHARS);
    if (short !== undefined)
      throw new ConfigError(
        `KEEL_SIGNING_KEY: every key must have at least ${MIN_SECRET_CHARS} characters (one has ${short.length}); e.g. openssl rand -hex 32`,
      );
    return signingKeysOf(secrets, 'KEEL_SIGNING_KEY');
  }
  const path = resolve(config.baseDir, config.security.signingKeyFile);
  const { secret, created } = keyFromFile(path);
  if (secret.length < MIN_SECRET_CHARS)
    throw new ConfigError(`security.signingKeyFile: ${path} holds a key of ${secret.length} characters; it needs at least ${MIN_SECRET_CHARS}`);
  return { ...signingKeysOf([secret], path), created };
}

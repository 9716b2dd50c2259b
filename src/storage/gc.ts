/**
 * `keel storage gc`: deletes the payload store's blobs that no run needs any more. A blob is
 * kept while any history Temporal still holds refers to it (open runs and closed runs within the
 * namespace's retention; content-addressed blobs shared by several runs stay while one of them
 * remains), and while it is younger than `minAge` (a payload an activity has just stored, whose
 * completion is not in a history yet; the file driver renews a blob's time whenever it stores it
 * again). Once Temporal deletes a closed run at the end of its retention, that run's blobs go at
 * the next collection. The file driver only. Node side.
 */
import { listExecutions } from '../node/list-executions';
import type { Client } from '@temporalio/client';
import type { Payload } from '@temporalio/common';
import { decodeReferencePayload, isReferencePayload } from '@temporalio/common/lib/internal-non-workflow';
import { readdir, stat, unlink } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { ConfigError } from '../config/load';
import type { KeelConfig } from '../config/schema';

/** What a collection did. */
export interface GcReport {
  /** Runs (executions) whose histories were read. */
  runs: number;
  /** Distinct blobs those histories refer to. */
  referenced: number;
  /** Blobs in the store before the collection. */
  stored: number;
  /** Blobs deleted (or, with dryRun, that would be). */
  deleted: string[];
  /** Bytes those blobs held. */
  freedBytes: number;
  /** Unreferenced blobs kept because they are younger than minAge. */
  young: number;
}

/** Options of `collectGarbage`. */
export interface GcOptions {
  /** Blobs younger than this are kept even when unreferenced (default 1 hour). */
  minAgeMs?: number;
  /** Report what would be deleted, delete nothing. */
  dryRun?: boolean;
  /** The clock (tests). */
  now?: () => number;
}

const HASH = /^[0-9a-f]{64}$/;

/** Every payload in a history (or any proto object): an object with `metadata` and `data`. */
function* payloadsIn(value: unknown, seen = new Set<object>()): Generator<Payload> {
  if (value === null || typeof value !== 'object' || value instanceof Uint8Array || seen.has(value)) return;
  seen.add(value);
  if (Array.isArray(value)) {
    for (const item of value) yield* payloadsIn(item, seen);
    return;
  }
  const record = value as Record<string, unknown>;
  if ('metadata' in record && 'data' in record && (record.data === null || record.data instanceof Uint8Array)) yield record;
  for (const field of Object.values(record)) yield* payloadsIn(field, seen);
}

/** The hashes the file driver's references in `history` name. */
export function referencedHashes(history: unknown, into = new Set<string>()): Set<string> {
  for (const payload of payloadsIn(history)) {
    if (!isReferencePayload(payload)) continue;
    const reference = decodeReferencePayload(payload);
    const hash = (reference.claimData as Record<string, string | undefined>).hashValue;
    if (reference.driverName === 'keel.file' && hash) into.add(hash);
  }
  return into;
}

/** Reads every history the namespace holds (open and retained closed runs) for the blobs they refer to. */
async function referencesOfNamespace(client: Client): Promise<{ runs: number; hashes: Set<string> }> {
  const hashes = new Set<string>();
  let runs = 0;
  // Listed run by run: a run sealed with a key this project lacks still counts (its memo is not needed).
  for await (const execution of listExecutions(client)) {
    let history;
    try {
      history = await client.workflow.getHandle(execution.workflowId, execution.runId).fetchHistory();
    } catch (error) {
      // A run Temporal deleted between the listing and the read (its retention ended): it needs nothing.
      if ((error as { name?: string }).name === 'WorkflowNotFoundError' || /not found/i.test((error as Error).message)) continue;
      throw error;
    }
    runs += 1;
    referencedHashes(history, hashes);
  }
  return { runs, hashes };
}

/** Collects the file driver's store of `config` against the histories `client` can read. */
export async function collectGarbage(client: Client, config: Pick<KeelConfig, 'externalStorage' | 'baseDir'>, options: GcOptions = {}): Promise<GcReport> {
  const { minAgeMs = 60 * 60 * 1000, dryRun = false, now = Date.now } = options;
  const storage = config.externalStorage;
  if (storage.driver !== 'file')
    throw new ConfigError(
      `keel storage gc collects the file driver's store; externalStorage.driver is "${storage.driver}"${storage.driver === 's3' ? ' (for S3, a bucket lifecycle rule must not expire objects younger than the longest a run may wait plus the namespace retention)' : ''}`,
    );
  const directory = resolve(config.baseDir, storage.directory);
  // Listed before the histories are read: a blob stored after the listing is not considered at all.
  const blobs: Array<{ hash: string; path: string; size: number; mtimeMs: number }> = [];
  const temporaries: Array<{ path: string; mtimeMs: number }> = [];
  let shards: string[] = [];
  try {
    shards = (await readdir(directory, { withFileTypes: true }))
      .filter((entry) => entry.isDirectory() && /^[0-9a-f]{2}$/.test(entry.name))
      .map((entry) => entry.name);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  for (const shard of shards) {
    for (const name of await readdir(join(directory, shard))) {
      const path = join(directory, shard, name);
      const info = await stat(path).catch(() => undefined);
      if (!info?.isFile()) continue;
      if (HASH.test(name)) blobs.push({ hash: name, path, size: info.size, mtimeMs: info.mtimeMs });
      else if (name.endsWith('.tmp')) temporaries.push({ path, mtimeMs: info.mtimeMs });
    }
  }
  const { runs, hashes } = await referencesOfNamespace(client);
  const report: GcReport = { runs, referenced: hashes.size, stored: blobs.length, deleted: [], freedBytes: 0, young: 0 };
  const cutoff = now() - minAgeMs;
  for (const blob of blobs) {
    if (hashes.has(blob.hash)) continue;
    if (blob.mtimeMs > cutoff) {
      report.young += 1;
      continue;
    }
    if (!dryRun) await unlink(blob.path).catch(() => undefined);
    report.deleted.push(blob.hash);
    report.freedBytes += blob.size;
  }
  // Half-written files of a writer that died (renamed into place otherwise).
  if (!dryRun) for (const temporary of temporaries) if (temporary.mtimeMs <= cutoff) await unlink(temporary.path).catch(() => undefined);
  return report;
}

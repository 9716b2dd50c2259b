/**
 * Fair and prioritised work on the engine (docs/tenants.md, "Fair shares"): a run's Temporal
 * Priority. Its `fairnessKey` is its tenant, so Temporal hands out the tasks of a backlogged
 * queue to tenants in proportion to their weights; its `priorityKey` is its kind of work (a
 * person waiting on a chat turn first, background sub-agents, evals and forks after). Set on the
 * root workflow as it starts; Temporal hands both down to each activity and child workflow it
 * starts, and keel changes only the `priorityKey` of a background task. Pure: safe on both sides.
 */
import type { Priority } from '@temporalio/common';
import { z } from 'zod';

/** The kinds of work a priority is chosen by. */
export type WorkKind = 'interactive' | 'run' | 'background' | 'eval' | 'fork';

/** 1 (first) to 5 (last): the priority levels a Temporal server has unless its `matching.priorityLevels` says otherwise. */
const PriorityKeySchema = z.number().int().min(1).max(5);

export const FairnessConfigSchema = z
  .object({
    /** The priority of each kind of work: lower goes first. */
    priority: z
      .object({
        /** A chat's or a session's turns: a person is waiting. */
        interactive: PriorityKeySchema.default(1),
        /** A run started by a client (`keel run`, the UI, MCP, A2A, `KeelClient.start`). */
        run: PriorityKeySchema.default(3),
        /** A background task (a sub-agent started with `startTask`) and what it starts. */
        background: PriorityKeySchema.default(4),
        /** A case of `keel eval`. */
        eval: PriorityKeySchema.default(5),
        /** A fork (`keel fork`, the UI). */
        fork: PriorityKeySchema.default(4),
      })
      .strict()
      .prefault({}),
    /** A tenant's share against the others (1 unless listed; Temporal clamps to 0.001-1000). */
    weights: z.record(z.string().min(1), z.number().min(0.001).max(1000)).default({}),
  })
  .strict();
export type FairnessConfig = z.infer<typeof FairnessConfigSchema>;

/** The defaults, for a client built without a config. */
export const DEFAULT_FAIRNESS: FairnessConfig = FairnessConfigSchema.parse({});

/** Temporal's limit on a fairness key, in UTF-8 bytes. */
const FAIRNESS_KEY_BYTES = 64;

/** 64-bit FNV-1a of `bytes`, as 16 hex digits: a short stand-in for a long name. */
function fnv1a64(bytes: Uint8Array): string {
  let hash = 0xcbf29ce484222325n;
  for (const byte of bytes) hash = BigInt.asUintN(64, (hash ^ BigInt(byte)) * 0x100000001b3n);
  return hash.toString(16).padStart(16, '0');
}

/**
 * The fairness key of `tenant`: the name itself when it fits Temporal's 64 bytes, else its first
 * characters and a hash of the whole (two long names that share a start stay apart).
 */
export function fairnessKeyOf(tenant: string): string {
  const bytes = new TextEncoder().encode(tenant);
  if (bytes.length <= FAIRNESS_KEY_BYTES) return tenant;
  let head = '';
  for (const char of tenant) {
    if (new TextEncoder().encode(head + char).length > FAIRNESS_KEY_BYTES - 17) break;
    head += char;
  }
  return `${head}~${fnv1a64(bytes)}`;
}

/** The Priority a root workflow of `kind` starts with, for `tenant` (no fairness key for a run of no tenant). */
export function priorityOf(fairness: FairnessConfig, kind: WorkKind, tenant: string | undefined): Priority & { priorityKey: number } {
  const weight = tenant === undefined ? undefined : fairness.weights[tenant];
  return {
    priorityKey: fairness.priority[kind],
    ...(tenant !== undefined ? { fairnessKey: fairnessKeyOf(tenant) } : {}),
    ...(weight !== undefined ? { fairnessWeight: weight } : {}),
  };
}

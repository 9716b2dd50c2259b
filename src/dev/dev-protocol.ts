/**
 * What `keel dev` and the worker processes it starts say to each other over Node's IPC channel.
 * A worker process starts warm and waits (`standby`: keel, Temporal's worker and its connection
 * loaded, nothing of the project's); told to `start`, it loads the config and the project's
 * modules afresh and says it polls, or why it could not. Node side.
 */
import { z } from 'zod';

/** The environment variable that makes `keel worker` a worker process of `keel dev` (talking over IPC). */
export const DEV_WORKER_ENV = 'KEEL_DEV_WORKER';

/** `keel dev` to its worker process: load the project now and poll. */
export const StartMessageSchema = z.object({ type: z.literal('start') });
export type StartMessage = z.infer<typeof StartMessageSchema>;

/** What a worker process says. */
export const WorkerMessageSchema = z.discriminatedUnion('type', [
  /** Warm and waiting for `start`. */
  z.object({ type: z.literal('standby') }),
  /** The config changed what its warm Worker was made from: start a process warmed on the new config instead. It exits. */
  z.object({ type: z.literal('cold') }),
  /** Loaded and polling; `watch`: the project's files a change of which calls for a new worker. */
  z.object({ type: z.literal('polling'), watch: z.array(z.string()) }),
  /** Could not load: the error in one line naming the file (`line`), in full (`message`), and what to watch for the fix. */
  z.object({ type: z.literal('failed'), line: z.string(), message: z.string(), usage: z.boolean(), watch: z.array(z.string()) }),
]);
export type WorkerMessage = z.infer<typeof WorkerMessageSchema>;

/**
 * Forking from code (docs/fork.md): `npx tsx examples/fork.ts <runId> <turn> [message]` forks the
 * run at that turn (with the message as the user's there, when given), waits for the fork, and
 * prints both answers and what the fork carried, with the config in ./temporal.yaml. A worker of
 * the run's task queue must be running.
 */
import { KeelClient, loadConfig, type RunHandle } from 'keel-agents';

/** Forks `source` at `at` (with `message`), waits for the fork, and says how its answer differs. */
export async function forkAndCompare(client: KeelClient, source: string, at: number, message?: string): Promise<string[]> {
  const original = client.getHandle(source);
  const fork = await original.fork({ at, ...(message ? { message } : {}) });
  const handle: RunHandle = fork.handle;
  const [before, after] = await Promise.all([original.result(), handle.result()]);
  return [
    `run ${source}: ${before.text}`,
    `fork ${fork.runId} (at turn ${fork.turn}, carrying ${JSON.stringify(fork.usage)}): ${after.text}`,
    `the fork spent ${JSON.stringify(after.usage)} of its own`,
  ];
}

if (require.main === module) {
  const [source, turn, message] = process.argv.slice(2);
  if (!source || turn === undefined) {
    console.error('usage: npx tsx examples/fork.ts <runId> <turn> [message]');
    process.exit(2);
  }
  void (async () => {
    const client = await KeelClient.connect(loadConfig({}));
    try {
      for (const line of await forkAndCompare(client, source, Number(turn), message)) console.log(line);
    } finally {
      await client.close();
    }
  })();
}

/**
 * A keel worker started from temporal.yaml, the way your own project starts one: run it with
 * `npx tsx worker.ts` (or compile it), as many times as you want workers. Equivalent to
 * `keel worker`; edit it to add your own setup (telemetry, an extra registry).
 */
import { connectClient, connectWorker, createKeelWorker, loadConfig, loadRegistry } from './src/index';

async function main(): Promise<void> {
  const config = loadConfig();
  const registry = await loadRegistry(config);
  const [connection, client] = await Promise.all([connectWorker(config), connectClient(config)]);
  const worker = await createKeelWorker({ config, registry, connection, client });
  process.stderr.write(`keel: worker ${process.pid} on task queue "${config.taskQueue}" at ${config.temporal.address}\n`);
  // Drains on SIGINT/SIGTERM: calls under way finish (or move to another worker).
  await worker.run();
  await registry.close(); // MCP server connections
  await connection.close();
  await client.connection.close();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});

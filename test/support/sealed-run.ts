/**
 * A run of someone else's in the shared namespace, its memo sealed with an encryption key the
 * test's own project lacks (started on a queue nobody polls): what keel's listings must read past.
 */
import { randomBytes } from 'node:crypto';
import { KeelClient } from '../../src/client/keel-client';
import { loadConfig } from '../../src/config/load';
import { writeTestConfig } from './processes';

/** Starts the run; resolves to its workflow id (terminate it when done). */
export async function startSealedRun(prefix: string): Promise<string> {
  const variable = `KEEL_TEST_SEALED_KEY_${process.pid}`;
  process.env[variable] = randomBytes(32).toString('base64');
  const sealed = await KeelClient.connect(
    loadConfig({
      path: writeTestConfig(`${prefix}-sealed`, { server: { enabled: false }, encryption: { key: 'k', keys: { k: { env: variable } } } }).configPath,
    }),
  );
  try {
    const started = await sealed.temporal.workflow.start('generateWorkflow', {
      taskQueue: `${prefix}-nobody-polls`,
      workflowId: `${prefix}-stranger-${Date.now()}`,
      args: [{ agent: 'x', messages: [] }],
      memo: { agent: 'x' },
    });
    return started.workflowId;
  } finally {
    await sealed.close();
    delete process.env[variable];
  }
}

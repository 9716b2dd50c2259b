/**
 * Cost on the command line, with real processes: a priced model's run says what it used and
 * what it cost when it ends (stderr, for a person), and `keel run --json` and `keel status`
 * carry `usage.cost`.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { killAfterEach, runKeel, spawnKeel, writeTestConfig } from './support/processes';

const track = killAfterEach(afterEach);

const { configPath: config } = writeTestConfig('cost-cli', {
  server: { enabled: false },
  agents: [{ name: 'priced', description: 'Answers, at a price.', model: 'scripted/priced' }],
  models: [
    {
      name: 'scripted/priced',
      // $3 per million input tokens and $15 per million output: 2,000 in and 500 out cost $0.0135.
      price: { inputPerMTok: 3, outputPerMTok: 15 },
      script: [{ text: 'an answer', usage: { inputTokens: 2000, outputTokens: 500 } }],
    },
  ],
});

describe('cost on the command line', () => {
  it('keel run says the tokens and the cost; --json and keel status carry usage.cost', async () => {
    const worker = track(spawnKeel(['worker', '--config', config]));
    await worker.waitFor(/keel: worker \d+ on task queue/);

    const plain = await runKeel(['run', 'priced', 'hello', '--config', config]);
    expect(plain.code, plain.stderr).toBe(0);
    expect(plain.stdout.trim()).toBe('an answer');
    expect(plain.stderr).toContain('usage: 2,000 input + 500 output tokens, $0.0135');

    const json = await runKeel(['run', 'priced', 'hello', '--json', '--config', config]);
    expect(json.code, json.stderr).toBe(0);
    const summary = JSON.parse(json.stdout) as { runId: string; usage: { cost?: number; inputTokens?: number } };
    expect(summary.usage).toMatchObject({ inputTokens: 2000, outputTokens: 500, cost: 0.0135 });
    expect(json.stderr).not.toContain('usage:');

    const status = await runKeel(['status', summary.runId, '--config', config]);
    expect(status.code, status.stderr).toBe(0);
    expect((JSON.parse(status.stdout) as { usage: unknown }).usage).toMatchObject({ cost: 0.0135 });
  });
});

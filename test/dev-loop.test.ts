/**
 * `keel dev` as a user edits their project while it runs (real keel dev, real worker processes,
 * the shared dev server): a save restarts the worker and the new code answers, within seconds
 * (printed: how long from the save to the new worker polling); a save that does not load (a
 * syntax error, a temporal.yaml that does not parse) is said in one line naming the file while
 * the last good worker keeps answering runs; Ctrl-C stops every worker process it started.
 */
import { readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { temporal } from '@temporalio/proto';
import { KeelClient } from '../src/client/keel-client';
import { loadConfig } from '../src/config/load';
import type { RunResult } from '../src/core/run';
import { isAlive } from '../src/server/server-owner';
import { ROOT, killAfterEach, spawnKeel, writeTestConfig, type KeelProcess } from './support/processes';

const track = killAfterEach(afterEach);

/** agents.ts of the project: a model that answers `reply`, its agent, and whatever `extra` adds. */
function agentsModule(reply: string, extra = ''): string {
  return `import { z } from 'zod';
import { defineAgent, defineTool } from ${JSON.stringify(join(ROOT, 'src', 'index'))};
import { scriptedModel, textReply, toolCallReply } from ${JSON.stringify(join(ROOT, 'src', 'testing'))};

export const model = scriptedModel({ name: 'scripted/dev', script: () => textReply(${JSON.stringify(reply)}) });
export const helper = defineAgent({ name: 'dev-helper', model: 'scripted/dev' });
${extra}`;
}

/** What v2 adds: a tool, and an agent that calls it. */
const SHOUTER = `
export const shout = defineTool({ name: 'shout', description: 'Shouts.', input: z.object({ text: z.string() }), run: async ({ text }) => text.toUpperCase() });
export const shoutModel = scriptedModel({ name: 'scripted/shouter', script: [toolCallReply({ name: 'shout', input: { text: 'hi' } }), textReply('shouted')] });
export const shouter = defineAgent({ name: 'dev-shouter', model: 'scripted/shouter', tools: [shout] });
`;

/** A project in a temp dir: temporal.yaml (the shared server, a queue of its own) listing ./agents.ts. */
function project(source: string): { dir: string; configPath: string; taskQueue: string } {
  const { dir, configPath, taskQueue } = writeTestConfig('dev', { modules: ['./agents.ts'] });
  // The project's own node_modules, as an installed one has (zod resolves from there).
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  writeFileSync(join(dir, 'agents.ts'), source);
  return { dir, configPath, taskQueue: taskQueue! };
}

/** Starts keel dev on the project and waits until it watches; returns it and its worker's pid. */
async function startDev(configPath: string): Promise<{ dev: KeelProcess; pid: number }> {
  const dev = track(spawnKeel(['dev', '--config', configPath]));
  await dev.waitFor(/keel dev: watching \d+ files/, 90_000);
  return { dev, pid: Number(/keel: worker (\d+) on task queue/.exec(dev.stderr())![1]) };
}

/** A run of `agent` on the project's task queue, started by a client in this process. */
async function runOf(configPath: string, agent: string): Promise<RunResult> {
  const client = await KeelClient.connect(loadConfig({ path: configPath }));
  try {
    return await client.run(agent, 'go');
  } finally {
    await client.close();
  }
}

/** The text of a run of `agent`. */
async function answer(configPath: string, agent: string): Promise<string> {
  return (await runOf(configPath, agent)).text;
}

/** Pids of live processes whose command line names `needle`. */
function processesNaming(needle: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(needle) && isAlive({ pid: Number(entry) })) found.push(Number(entry));
    } catch {
      // It ended while we read.
    }
  }
  return found;
}

describe('keel dev', () => {
  it('restarts the worker on a save, within seconds, and the new code answers (a changed reply, a new tool)', async () => {
    const { configPath, dir, taskQueue } = project(agentsModule('v1'));
    const { dev, pid: first } = await startDev(configPath);
    expect(dev.stderr()).toContain(`keel dev: watching`);
    // keel dev serves keel ui beside the worker (on ui.port, or a free one when that is taken).
    const ui = /keel: UI at (http:\/\/\S+)/.exec(dev.stderr())?.[1];
    expect(ui, dev.stderr()).toBeDefined();
    expect(((await (await fetch(`${ui!}/api/info`)).json()) as { taskQueue: string }).taskQueue).toBe(taskQueue);
    expect(await answer(configPath, 'dev-helper')).toBe('v1');

    const saved = Date.now();
    writeFileSync(join(dir, 'agents.ts'), agentsModule('v2', SHOUTER));
    const reloaded = /agents\.ts changed: worker (\d+) polls with the new code, ([\d.]+) s after the save; worker (\d+) drains and stops/;
    await dev.waitFor(reloaded, 30_000);
    const seen = Date.now() - saved;
    const [, second, seconds, drained] = reloaded.exec(dev.stderr())!;
    console.log(`keel dev reload: ${seconds} s from the save to the new worker polling (keel dev's clock); the test saw the line ${seen} ms after writing`);
    expect(Number(drained)).toBe(first);
    expect(Number(second)).not.toBe(first);
    // A loose bound (the goal is under 3 s; a loaded machine may be slower): the reload is not a cold start of everything.
    expect(seen).toBeLessThan(20_000);

    // The new worker polls the task queue (Temporal says so), and the old one has drained and exited.
    const client = await KeelClient.connect(loadConfig({ path: configPath }));
    try {
      const pollers = async () =>
        (
          await client.temporal.workflowService.describeTaskQueue({
            namespace: client.temporal.options.namespace,
            taskQueue: { name: taskQueue },
            taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
          })
        ).pollers?.map((poller) => poller.identity?.split('@')[0]) ?? [];
      // Its first poll reaches the server a moment after it says it polls.
      await expect.poll(pollers, { timeout: 10_000, interval: 100 }).toContain(second);
    } finally {
      await client.close();
    }
    await expect.poll(() => isAlive({ pid: first }), { timeout: 30_000, interval: 100 }).toBe(false);

    expect(await answer(configPath, 'dev-helper')).toBe('v2');
    // The new tool runs.
    const shouted = await runOf(configPath, 'dev-shouter');
    expect(shouted.text).toBe('shouted');
    expect(shouted.messages.flatMap((message) => message.content)).toContainEqual({ toolResponse: expect.objectContaining({ name: 'shout', output: 'HI' }) });

    // Ctrl-C: keel dev stops its workers (the one polling drains; the one waiting for the next change exits).
    dev.kill('SIGINT');
    expect(await dev.exited).toBe(0);
    expect(processesNaming(configPath)).toEqual([]);
  });

  it('says a save that does not load in one line naming the file, and the last good worker keeps answering', async () => {
    const { configPath, dir } = project(agentsModule('v1'));
    const { dev, pid } = await startDev(configPath);
    const agentsFile = join(dir, 'agents.ts');

    // A syntax error.
    let before = dev.output().length;
    writeFileSync(agentsFile, `${agentsModule('v2')}\nexport const broken = {\n`);
    await dev.waitFor(/not reloaded/, 30_000);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(dev.output().slice(before).trimEnd().split('\n')).toEqual([
      expect.stringMatching(
        new RegExp(`^keel dev: agents\\.ts changed, not reloaded: ${agentsFile}:\\d+:\\d+: Expected .*; worker ${pid} keeps running the last good code$`),
      ),
    ]);
    expect(await answer(configPath, 'dev-helper')).toBe('v1');

    // A temporal.yaml that does not parse, while the module is still broken (runs are started with a good copy).
    const config = readFileSync(configPath, 'utf8');
    const clientConfig = join(dir, 'client.yaml');
    writeFileSync(clientConfig, config);
    before = dev.output().length;
    writeFileSync(configPath, `${config}\nagents: [ {name: \n`);
    await dev.waitFor(/temporal\.yaml changed, not reloaded/, 30_000);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(dev.output().slice(before).trimEnd().split('\n')).toEqual([
      expect.stringMatching(new RegExp(`^keel dev: temporal\\.yaml changed, not reloaded: ${configPath}.*not valid YAML.*; worker ${pid} keeps running`)),
    ]);
    expect(await answer(clientConfig, 'dev-helper')).toBe('v1');

    // Both fixed, the config declaring an agent of its own too: the next worker has both.
    const fixed = parse(config) as Record<string, unknown>;
    writeFileSync(agentsFile, agentsModule('v2'));
    writeFileSync(configPath, stringify({ ...fixed, agents: [{ name: 'dev-declared', model: 'scripted/dev' }] }));
    await dev.waitFor(/changed: worker \d+ polls with the new code/, 30_000);
    await expect.poll(() => isAlive({ pid }), { timeout: 30_000, interval: 100 }).toBe(false);
    expect(await answer(configPath, 'dev-helper')).toBe('v2');
    expect(await answer(configPath, 'dev-declared')).toBe('v2');
  });
});

/**
 * `keel dev`: the dev server (unless one already answers, which it names with whose it is and
 * leaves running) and a worker that restarts when the project's code changes. The worker runs
 * as a child process, `keel worker` on the same config (a module loaded through tsx cannot be
 * unloaded, so a reload is a new process); the next one is started ahead and waits warm
 * (dev-worker.ts), so a save reaches a polling worker in about a second. keel dev watches
 * temporal.yaml, the modules it lists and the project files they import (source-watcher.ts). On
 * a change it tells the waiting process to load the project; once that polls, the old worker is
 * sent SIGTERM and drains. One that fails to load is said in one line naming the file, and the
 * last good worker keeps running. SIGINT/SIGTERM stop every worker (they drain) and the server
 * keel dev started. Node side.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join, relative, resolve } from 'node:path';
import type { KeelConfig } from '../config/schema';
import { PACKAGE_ROOT } from '../node/package-root';
import { requireModule } from '../node/require-ts';
import type { UiServer } from '../ui/server';
import { diesWithParent } from '../server/parent-death';
import { DEV_WORKER_ENV, WorkerMessageSchema, type StartMessage, type WorkerMessage } from './dev-protocol';
import { waitForSignal } from '../node/signals';
import { describeRunningServer, ensureServer, type WorkerRunOptions } from '../ops/processes';
import { SourceWatcher, type SourceChange } from './source-watcher';

/** What a worker process said, or that it exited. */
type WorkerEvent = WorkerMessage | { type: 'exited'; code: number | null; signal: NodeJS.Signals | null };

/** A worker process of keel dev. */
interface WorkerProcess {
  pid: number;
  /** The next thing it says (or its exit, once it has exited). */
  next: () => Promise<WorkerEvent>;
  send: (message: StartMessage) => void;
  /** SIGTERM: a polling worker drains, a waiting one exits. */
  stop: () => void;
  /** SIGKILL. */
  kill: () => void;
  /** Settles once it is warm and waits for `start` (or has exited). */
  warm: Promise<void>;
  exited: Promise<Extract<WorkerEvent, { type: 'exited' }>>;
}

/** The `keel` command of this package. */
const KEEL_BIN = join(PACKAGE_ROOT, 'bin', 'keel.cjs');

/** Starts `keel worker` as a worker process of keel dev: it warms up and waits for `start`. */
function spawnWorkerProcess(config: KeelConfig, { allowEmpty = false }: WorkerRunOptions): WorkerProcess {
  const args = [KEEL_BIN, 'worker', ...(config.path ? ['--config', config.path] : []), ...(allowEmpty ? ['--allow-empty'] : [])];
  // It dies with keel dev, even a SIGKILLed one (setpriv, where there is one; else its IPC channel closing stops it).
  const command = diesWithParent(process.execPath, args);
  // From keel dev's own directory, as `keel worker` run there would: the bundle cache and tsx's tsconfig are looked up from it.
  const child: ChildProcess = spawn(command.command, command.args, {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, [DEV_WORKER_ENV]: '1' },
  });
  const queue: WorkerEvent[] = [];
  const waiting: Array<(event: WorkerEvent) => void> = [];
  let exit: Extract<WorkerEvent, { type: 'exited' }> | undefined;
  const push = (event: WorkerEvent) => {
    const waiter = waiting.shift();
    if (waiter) waiter(event);
    else queue.push(event);
  };
  let markWarm: () => void = () => undefined;
  const warm = new Promise<void>((resolveWarm) => (markWarm = resolveWarm));
  child.on('message', (raw) => {
    const parsed = WorkerMessageSchema.safeParse(raw);
    if (!parsed.success) return;
    if (parsed.data.type === 'standby') markWarm();
    push(parsed.data);
  });
  const exited = new Promise<Extract<WorkerEvent, { type: 'exited' }>>((resolveExit) => {
    const settle = (code: number | null, signal: NodeJS.Signals | null) => {
      if (exit) return;
      exit = { type: 'exited', code, signal };
      while (waiting.length) waiting.shift()!(exit);
      resolveExit(exit);
    };
    child.once('exit', settle);
    child.once('error', () => settle(null, null));
  });
  void exited.then(markWarm);
  return {
    pid: child.pid ?? 0,
    next: () => {
      const queued = queue.shift();
      if (queued) return Promise.resolve(queued);
      if (exit) return Promise.resolve(exit);
      return new Promise((resolveNext) => waiting.push(resolveNext));
    },
    send: (message) => {
      if (child.connected) child.send(message);
    },
    stop: () => {
      if (!exit) child.kill('SIGTERM');
    },
    kill: () => {
      if (!exit) child.kill('SIGKILL');
    },
    warm,
    exited,
  };
}

/** How a worker process that was told to start ended up. */
interface StartOutcome {
  process: WorkerProcess;
  event: Extract<WorkerEvent, { type: 'polling' | 'failed' | 'exited' }>;
}

/** The workers of one keel dev: the one polling, the next one waiting warm, and old ones draining. */
class DevLoop {
  private current: WorkerProcess | undefined;
  private standby: WorkerProcess | undefined;
  private starting: WorkerProcess | undefined;
  private readonly draining = new Set<WorkerProcess>();
  private reloading = false;
  private pending: SourceChange | undefined;
  private stopping = false;
  readonly watcher: SourceWatcher;

  constructor(
    private readonly config: KeelConfig,
    private readonly options: WorkerRunOptions,
    private readonly say: (line: string) => void,
  ) {
    this.watcher = new SourceWatcher({ onChange: (change) => void this.reload(change) });
    // Before the first worker says what it loaded: the config and the modules it lists.
    this.watcher.add([
      config.path ?? join(config.baseDir, 'temporal.yaml'),
      ...[...config.modules, ...config.middlewareModules].map((module) => resolve(config.baseDir, module)),
    ]);
  }

  /** Starts the first worker; resolves with its failure when it could not load, else undefined once it polls. */
  async start(): Promise<Extract<WorkerMessage, { type: 'failed' }> | Extract<WorkerEvent, { type: 'exited' }> | undefined> {
    this.reloading = true;
    // The first worker and the one for the first change warm up side by side.
    const outcome = await this.bringUp({ thenPrepareNext: true });
    this.reloading = false;
    if (outcome.event.type === 'polling') {
      this.promote(outcome.process, outcome.event.watch);
      this.prepareNext();
      if (this.pending) void this.reload(this.pending);
      return undefined;
    }
    return outcome.event;
  }

  /** Restarts the worker for a change: a new process loads the project; the old one drains once it polls. */
  async reload(change: SourceChange): Promise<void> {
    if (this.stopping) return;
    if (this.reloading) {
      this.pending = this.pending ? { files: [...new Set([...this.pending.files, ...change.files])], firstAt: this.pending.firstAt } : change;
      return;
    }
    this.reloading = true;
    this.pending = undefined;
    const changed = change.files
      .map((file) => {
        const inProject = relative(this.config.baseDir, file);
        return inProject && !inProject.startsWith('..') ? inProject : file;
      })
      .join(', ');
    try {
      const outcome = await this.bringUp();
      if (this.stopping) return;
      const seconds = ((Date.now() - change.firstAt) / 1000).toFixed(1);
      const old = this.current;
      const keeps = old ? `worker ${old.pid} keeps running the last good code` : 'no worker runs until it loads';
      if (outcome.event.type === 'polling') {
        this.promote(outcome.process, outcome.event.watch);
        this.say(
          `keel dev: ${changed} changed: worker ${outcome.process.pid} polls with the new code, ${seconds} s after the save${old ? `; worker ${old.pid} drains and stops` : ''}`,
        );
      } else if (outcome.event.type === 'failed') {
        this.watcher.add(outcome.event.watch);
        this.say(`keel dev: ${changed} changed, not reloaded: ${outcome.event.line}; ${keeps}`);
      } else {
        const how = outcome.event.signal ? `signal ${outcome.event.signal}` : `code ${outcome.event.code}`;
        this.say(`keel dev: ${changed} changed, not reloaded: the new worker (pid ${outcome.process.pid}) exited (${how}) before it polled; ${keeps}`);
      }
    } finally {
      this.reloading = false;
    }
    this.prepareNext();
    if (this.pending) void this.reload(this.pending);
  }

  /** Stops every worker process (a polling one drains) and waits for them to exit; a second SIGINT/SIGTERM meanwhile kills them. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.watcher.close();
    const all = [this.current, this.standby, this.starting, ...this.draining].filter((worker) => worker !== undefined);
    for (const worker of all) worker.stop();
    const exited = Promise.all(all.map((worker) => worker.exited));
    const force = () => {
      this.say('keel dev: stopping the workers now, without waiting for their calls to finish');
      for (const worker of all) worker.kill();
    };
    process.once('SIGINT', force);
    process.once('SIGTERM', force);
    try {
      await exited;
    } finally {
      process.off('SIGINT', force);
      process.off('SIGTERM', force);
    }
  }

  /** The waiting process told to start, or a new one when none waits; a process that finds the config changed what it warmed up for is replaced once. */
  private async bringUp({ thenPrepareNext = false } = {}): Promise<StartOutcome> {
    for (let attempt = 0; ; attempt++) {
      const candidate = this.standby ?? spawnWorkerProcess(this.config, this.options);
      this.standby = undefined;
      this.starting = candidate;
      if (thenPrepareNext) this.prepareNext();
      try {
        let event = await candidate.next();
        if (event.type === 'standby') {
          candidate.send({ type: 'start' });
          event = await candidate.next();
        }
        if (event.type === 'cold' && attempt === 0 && !this.stopping) continue;
        if (event.type === 'polling' || event.type === 'failed' || event.type === 'exited') return { process: candidate, event };
        // Said nothing that fits (cold twice): take it for a worker that exited.
        return { process: candidate, event: await candidate.exited };
      } finally {
        this.starting = undefined;
      }
    }
  }

  /** Makes `next` the worker; the one before drains (SIGTERM). */
  private promote(next: WorkerProcess, watch: string[]): void {
    const old = this.current;
    this.current = next;
    this.watcher.add(watch);
    if (old) {
      this.draining.add(old);
      old.stop();
      void old.exited.then(() => this.draining.delete(old));
    }
    void next.exited.then((exit) => {
      if (this.current !== next || this.stopping) return;
      this.current = undefined;
      const how = exit.signal ? `signal ${exit.signal}` : `code ${exit.code}`;
      this.say(`keel dev: worker ${next.pid} exited (${how}); keel dev starts another when a watched file changes (Ctrl-C stops keel dev)`);
    });
  }

  /** Starts the process that waits, warm, for the next change. */
  private prepareNext(): void {
    if (this.stopping || this.standby) return;
    this.standby = spawnWorkerProcess(this.config, this.options);
  }

  /** Settles once the process for the next change is warm (a reload then takes about a second). */
  async ready(): Promise<void> {
    await this.standby?.warm;
  }
}

/** `keel dev`: dev server (unless one is reachable, which it names and leaves running) plus a worker that restarts on a save. */
export async function runDev(config: KeelConfig, options: WorkerRunOptions = {}): Promise<number> {
  const say = (line: string) => process.stderr.write(`${line}\n`);
  const server = await ensureServer(config, { command: 'keel dev' });
  if (server) say(`keel: Temporal dev server at ${server.address}${server.uiAddress ? `, UI ${server.uiAddress}` : ''}`);
  else say(`keel: ${describeRunningServer(config, 'keel dev')}`);
  const signalled = waitForSignal();
  const ui = await startDevUi(config, say);
  const loop = new DevLoop(config, options, say);
  try {
    const first = await Promise.race([loop.start(), signalled.then(() => 'signalled' as const)]);
    if (first === 'signalled') return 0;
    if (first?.type === 'failed') {
      say(`keel: ${first.message}`);
      return first.usage ? 2 : 1;
    }
    if (first?.type === 'exited') {
      say(`keel dev: the worker exited (${first.signal ? `signal ${first.signal}` : `code ${first.code}`}) before it polled`);
      return 1;
    }
    // Said once the next worker process is warm: from then on a save reaches a polling worker fastest.
    if ((await Promise.race([loop.ready(), signalled.then(() => 'signalled' as const)])) === 'signalled') return 0;
    const { files, directories } = loop.watcher.counts();
    say(
      `keel dev: watching ${files} files in ${directories} ${directories === 1 ? 'directory' : 'directories'} (temporal.yaml, the modules and the project files they import); a save restarts the worker`,
    );
    await signalled;
    return 0;
  } finally {
    await loop.stop();
    await ui?.close();
    await server?.stop();
  }
}

/**
 * keel ui beside the dev loop (docs/ui.md), on `ui.port`, or on a free port when another
 * process holds that one; on loopback it serves every agent at /mcp unless `serve.agents` names
 * some (docs/mcp.md). One that cannot start is said in one line; keel dev goes on without it.
 */
async function startDevUi(config: KeelConfig, say: (line: string) => void): Promise<UiServer | undefined> {
  const { servedLines, startUiServer } = requireModule<typeof import('../ui/server')>('../ui/server', __filename);
  try {
    let ui: UiServer;
    try {
      ui = await startUiServer({ config, exposeAll: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
      ui = await startUiServer({ config, port: 0, exposeAll: true });
      say(`keel dev: port ${config.ui.port} is taken; the UI listens on another`);
    }
    say(`keel: UI at ${ui.url} (inbox of holds, runs, live run view)`);
    for (const line of servedLines(ui)) say(line);
    if (ui.serveProblem) say(`keel dev: agents not served to other agents: ${ui.serveProblem}`);
    return ui;
  } catch (error) {
    say(`keel dev: no UI: ${(error as Error).message}`);
    return undefined;
  }
}

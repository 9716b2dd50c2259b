/**
 * One watcher per open run for `keel ui`: however many pages show a run, the server follows its
 * events once (RunHandle.events, which polls Temporal without touching the run's history) and
 * hands each event to every page that listens. A watcher stops when its last listener leaves or
 * the run ends; it keeps no history (only the text the model call under way has streamed, for
 * pages that join late), so memory stays bounded by the pages open. Node side.
 */
import type { KeelClient } from '../client/keel-client';
import type { RunEvent } from '../client/run-events';
import { messageText } from '../core/messages';

/** Receives a run's events; `undefined` means the watch ended (the run ended or failed to be followed). */
export type RunListener = (event: RunEvent | undefined) => void;

interface Watcher {
  listeners: Set<RunListener>;
  stop: AbortController;
  /** The text the model call under way has streamed so far: a page that joins late starts with it. */
  streamed: string;
}

export class EventHub {
  private readonly watchers = new Map<string, Watcher>();

  constructor(
    private readonly client: KeelClient,
    private readonly intervalMs = 250,
  ) {}

  /** How many runs are watched now (one watcher each). */
  get watched(): number {
    return this.watchers.size;
  }

  /** Listens to `runId`'s events until the returned function is called. */
  listen(runId: string, listener: RunListener): () => void {
    let watcher = this.watchers.get(runId);
    if (!watcher) {
      watcher = { listeners: new Set(), stop: new AbortController(), streamed: '' };
      this.watchers.set(runId, watcher);
      void this.follow(runId, watcher);
    } else if (watcher.streamed) listener({ type: 'text', delta: watcher.streamed, final: false });
    watcher.listeners.add(listener);
    return () => {
      const current = this.watchers.get(runId);
      if (!current?.listeners.delete(listener) || current.listeners.size) return;
      this.watchers.delete(runId);
      current.stop.abort();
    };
  }

  /** Stops every watcher. */
  close(): void {
    for (const watcher of this.watchers.values()) watcher.stop.abort();
    this.watchers.clear();
  }

  private async follow(runId: string, watcher: Watcher): Promise<void> {
    const { signal } = watcher.stop;
    try {
      for await (const event of this.client.getHandle(runId).events({ intervalMs: this.intervalMs, signal })) {
        if (event.type === 'text') watcher.streamed = event.final ? '' : watcher.streamed + event.delta;
        // The answer of the call streaming ends its text; a model message of a session's history read meanwhile does not.
        else if (event.type === 'message' && event.message.role === 'model' && messageText(event.message).startsWith(watcher.streamed)) watcher.streamed = '';
        for (const listener of watcher.listeners) listener(event);
        if (signal.aborted) return;
      }
    } catch {
      // A run that cannot be followed (gone, unreachable): its pages learn the watch ended.
    }
    if (this.watchers.get(runId) === watcher) this.watchers.delete(runId);
    for (const listener of watcher.listeners) listener(undefined);
  }
}

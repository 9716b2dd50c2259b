/**
 * One run, live: the conversation as a chat (the model's text streamed while it answers), each
 * tool call with its input and output, holds inline with their forms, the runs below it, its
 * background tasks, usage, artifacts, files its Filesystem tools wrote, decisions, abort, and a
 * link to its raw history in the Temporal Web UI. Live through one event stream per open page
 * (the server watches each run once); every event that changes the run reloads its view.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { SteerBox } from './steer-box';
import { ForkBox } from './fork-box';
import { ApiError, get, post, type Info, type Message, type Part, type RunEvent, type RunView as View } from './api';
import { json } from './format';
import { HoldCard } from './hold';

const ENDED = new Set(['completed', 'failed', 'cancelled', 'terminated', 'timed_out']);

function PartView({ part }: { part: Part }) {
  if ('text' in part) return <p class="text">{part.text}</p>;
  if ('toolRequest' in part)
    return (
      <details class="tool-call" data-testid="tool-call" open={JSON.stringify(part.toolRequest.input ?? {}).length < 200}>
        <summary>
          calls <code>{part.toolRequest.name}</code>
        </summary>
        <pre>{json(part.toolRequest.input)}</pre>
      </details>
    );
  if ('toolResponse' in part)
    return (
      <details class="tool-result" data-testid="tool-result" open={JSON.stringify(part.toolResponse.output ?? null).length < 200}>
        <summary>
          <code>{part.toolResponse.name}</code> answered
        </summary>
        <pre>{json(part.toolResponse.output)}</pre>
      </details>
    );
  return <pre class="other">{json(part)}</pre>;
}

/**
 * Each message with the turn it belongs to (turn N: from the model's reply N on), and whether a
 * fork may go on after it: the last message of a turn (before the next model reply, or the
 * conversation's end), and the prompt before turn 1 (turn 0).
 */
function conversationWithTurns(messages: readonly Message[]): Array<{ message: Message; turn: number; endsTurn: boolean }> {
  let turn = 0;
  const marked = messages.map((message) => ({ message, turn: message.role === 'model' ? ++turn : turn, endsTurn: false }));
  marked.forEach((entry, index) => {
    const next = marked[index + 1];
    entry.endsTurn = entry.message.role !== 'system' && (next === undefined || next.message.role === 'model');
  });
  return marked;
}

function MessageView({ message }: { message: Message }) {
  if (message.role === 'system')
    return (
      <details class="message system" data-testid="message-system">
        <summary class="role">system prompt</summary>
        {message.content.map((part, index) => (
          <PartView key={index} part={part} />
        ))}
      </details>
    );
  return (
    <div class={`message ${message.role}`} data-testid={`message-${message.role}`}>
      <span class="role">{message.role}</span>
      {message.content.map((part, index) => (
        <PartView key={index} part={part} />
      ))}
    </div>
  );
}

/** What the run (its tree, when it keeps the tree's ledger) has spent of a capped field (`custom.<name>` for a custom one). */
function spentOn(field: string, view: View): number {
  const usage = (view.status.treeUsage ?? view.status.usage) as Record<string, unknown> & { custom?: Record<string, number> };
  const own = field.startsWith('custom.') ? (usage.custom?.[field.slice(7)] ?? 0) : typeof usage[field] === 'number' ? usage[field] : 0;
  return own + (view.status.treeUsage ? 0 : (view.budget?.spent?.[field] ?? 0));
}

/** A side list of the run view: its title, then its items, or "none". */
function Listed<T>({
  title,
  items,
  testId,
  className,
  children,
}: {
  title: string;
  items: readonly T[];
  testId?: string;
  className?: string;
  children: (item: T, index: number) => ComponentChildren;
}) {
  return (
    <>
      <h2>{title}</h2>
      {items.length ? (
        <ul class={className} data-testid={testId}>
          {items.map(children)}
        </ul>
      ) : (
        <p class="empty">none</p>
      )}
    </>
  );
}

export function RunView({ runId, info }: { runId: string; info: Info | undefined }) {
  const [view, setView] = useState<View>();
  const [error, setError] = useState<string>();
  const [streamed, setStreamed] = useState('');
  const [notice, setNotice] = useState<string>();
  const reload = useRef<() => void>(() => undefined);

  useEffect(() => {
    let live = true;
    let pending: ReturnType<typeof setTimeout> | undefined;
    const load = async () => {
      try {
        const next = await get<View>(`/api/runs/${encodeURIComponent(runId)}`);
        if (!live) return;
        setView(next);
        setError(undefined);
      } catch (failure) {
        if (live) setError(failure instanceof ApiError ? `${failure.status}: ${failure.message}` : String(failure));
      }
    };
    reload.current = () => {
      clearTimeout(pending);
      pending = setTimeout(() => void load(), 150);
    };
    void load();
    const events = new EventSource(`/api/runs/${encodeURIComponent(runId)}/events`);
    events.addEventListener('run', (message: MessageEvent<string>) => {
      const event = JSON.parse(message.data) as RunEvent;
      if (event.type === 'text' && !event.final) setStreamed((text) => text + event.delta);
      else {
        if (event.type === 'message') setStreamed('');
        reload.current();
      }
    });
    // The run ended (or cannot be followed): one last look, and no reconnect.
    events.addEventListener('closed', () => {
      events.close();
      setStreamed('');
      reload.current();
    });
    return () => {
      live = false;
      clearTimeout(pending);
      events.close();
    };
  }, [runId]);

  if (error && !view) return <p class="error">{error}</p>;
  if (!view) return <p>loading…</p>;
  const { status } = view;
  const ended = ENDED.has(status.state);
  const abort = async () => {
    try {
      await post(`/api/runs/${encodeURIComponent(runId)}/abort`, {});
      setNotice('abort sent');
      reload.current();
    } catch (failure) {
      setNotice((failure as Error).message);
    }
  };
  return (
    <section class="run">
      <header class="run-header">
        <h1>
          {status.agent} <small>{runId}</small>
        </h1>
        <span class={`state ${status.state}`} data-testid="run-state">
          {status.state}
        </span>
        <span>turn {status.turn}</span>
        {status.fork ? (
          <span data-testid="forked-from">
            forked from <a href={`/runs/${encodeURIComponent(status.fork.source)}`}>{status.fork.source}</a> at turn {status.fork.turn}
          </span>
        ) : null}
        <span data-testid="usage">
          tokens {status.usage.inputTokens ?? 0} in / {status.usage.outputTokens ?? 0} out
          {status.treeUsage ? ` (tree: ${status.treeUsage.inputTokens ?? 0} / ${status.treeUsage.outputTokens ?? 0})` : ''}
        </span>
        {view.budget ? (
          <span data-testid="budget" class="budget">
            budget{' '}
            {Object.entries(view.budget.limit)
              .map(([field, limit]) => `${field} ${spentOn(field, view)} / ${limit}`)
              .join(', ')}
          </span>
        ) : null}
        {view.temporalUrl ? (
          <a href={view.temporalUrl} target="_blank" rel="noreferrer">
            raw history in the Temporal Web UI
          </a>
        ) : null}
        {!ended ? (
          <button class="abort" onClick={() => void abort()}>
            Abort
          </button>
        ) : null}
      </header>
      {notice ? <p class="notice">{notice}</p> : null}
      {status.error ? (
        <p class="error" data-testid="run-error">
          {status.error.status}: {status.error.message}
        </p>
      ) : null}
      <div class="layout">
        <div class="chat" data-testid="chat">
          {conversationWithTurns(view.messages).map(({ message, turn, endsTurn }, index) => (
            <div key={index}>
              <MessageView message={message} />
              {endsTurn ? <ForkBox runId={runId} turn={turn} /> : null}
            </div>
          ))}
          {streamed ? (
            <div class="message model streaming" data-testid="streaming">
              <span class="role">model</span>
              <p class="text">{streamed}</p>
            </div>
          ) : null}
          {status.interrupts.map((hold) => (
            <HoldCard
              key={hold.id}
              runId={runId}
              hold={hold}
              agent={status.agent}
              inConversation
              info={info}
              onDecided={(summary) => {
                setNotice(summary);
                reload.current();
              }}
            />
          ))}
          {!ended ? (
            <SteerBox
              runId={runId}
              onSent={(summary) => {
                setNotice(summary);
                reload.current();
              }}
            />
          ) : null}
        </div>
        <aside>
          {status.output !== undefined ? (
            <>
              <h2>Output</h2>
              <pre class="output" data-testid="output">
                {JSON.stringify(status.output, null, 2)}
              </pre>
            </>
          ) : null}
          <Listed title="Forks" testId="forks" items={view.forks}>
            {(fork) => (
              <li key={fork}>
                <a href={`/runs/${encodeURIComponent(fork)}`}>{fork}</a>
              </li>
            )}
          </Listed>
          <Listed title="Runs below" testId="children" className="children" items={view.children}>
            {(child) => (
              <li key={child.runId}>
                <a href={`/runs/${encodeURIComponent(child.runId)}`}>{child.agent ?? child.runId}</a> <span class="badge">{child.kind}</span>{' '}
                <span class={`state ${child.state}`}>{child.state}</span>
                {child.task ? <div class="task">{child.task}</div> : null}
              </li>
            )}
          </Listed>
          <Listed title="Background tasks" items={status.tasks}>
            {(task) => (
              <li key={task.taskId}>
                <a href={`/runs/${encodeURIComponent(task.runId)}`}>{task.taskId}</a> ({task.agent})
              </li>
            )}
          </Listed>
          <Listed title="Artifacts" items={status.artifacts}>
            {(artifact) => (
              <li key={artifact.name}>
                {artifact.name} <small>({artifact.chars} chars)</small>
              </li>
            )}
          </Listed>
          <Listed title="Files written" items={view.files}>
            {(file, index) => (
              <li key={index}>
                <code>{file.path}</code> <small>{file.tool}</small> {file.ok ? '' : '(failed)'}
              </li>
            )}
          </Listed>
          <Listed title="Decisions" testId="decisions" items={status.decisions ?? []}>
            {(decision, index) => (
              <li key={index}>
                {decision.interruptId} {decision.decision}
                {decision.reason ? `: ${decision.reason}` : ''} <small>by {decision.decidedBy ?? 'unknown'}</small>
              </li>
            )}
          </Listed>
          <Listed title="Steering" testId="steering" items={status.steering ?? []}>
            {(steer) => (
              <li key={steer.id}>
                {steer.text} <span class="badge">{steer.state}</span>
                {steer.turn !== undefined ? <small> turn {steer.turn}</small> : null}
                {steer.cancelledModelCall ? <small> (cancelled a model call)</small> : null}
                {steer.reason ? <small>: {steer.reason}</small> : null}
              </li>
            )}
          </Listed>
        </aside>
      </div>
    </section>
  );
}

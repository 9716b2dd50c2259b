/**
 * The runs list (filter by agent and status, waiting first; each sub-agent under the run that
 * started it, when both are listed) and the playground that starts a run.
 */
import { useEffect, useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { ApiError, get, post, type Info, type RunListing } from './api';
import { age } from './format';

const STATES = ['', 'waiting', 'running', 'completed', 'failed', 'cancelled', 'terminated', 'timed_out'];
/** "Started within" choices, in hours ('' for any time). */
const WITHIN = [
  ['', 'any time'],
  ['1', 'last hour'],
  ['24', 'last day'],
  ['168', 'last week'],
] as const;

/** The runs in the listed order, each followed by the listed runs it started (at any depth), with their depth. */
function nested(runs: readonly RunListing[]): Array<{ run: RunListing; depth: number }> {
  const listed = new Set(runs.map((run) => run.runId));
  const below = new Map<string, RunListing[]>();
  for (const run of runs) if (run.parentId !== undefined && listed.has(run.parentId)) below.set(run.parentId, [...(below.get(run.parentId) ?? []), run]);
  const rows: Array<{ run: RunListing; depth: number }> = [];
  const add = (run: RunListing, depth: number) => {
    rows.push({ run, depth });
    for (const child of below.get(run.runId) ?? []) add(child, depth + 1);
  };
  for (const run of runs) if (run.parentId === undefined || !listed.has(run.parentId)) add(run, 0);
  return rows;
}

export function Runs() {
  const { query, route } = useLocation();
  const agent = query.agent ?? '';
  const status = query.status ?? '';
  const within = query.within ?? '';
  const [runs, setRuns] = useState<RunListing[]>();
  const [error, setError] = useState<string>();

  useEffect(() => {
    let live = true;
    const since = within ? new Date(Date.now() - Number(within) * 3_600_000).toISOString() : undefined;
    const params = new URLSearchParams({ ...(agent ? { agent } : {}), ...(status ? { status } : {}), ...(since ? { since } : {}), limit: '100' });
    const load = () =>
      get<{ runs: RunListing[] }>(`/api/runs?${params.toString()}`).then(
        (answer) => live && (setRuns(answer.runs), setError(undefined)),
        (failure: Error) => live && setError(failure.message),
      );
    void load();
    const timer = setInterval(() => void load(), 5000);
    return () => {
      live = false;
      clearInterval(timer);
    };
  }, [agent, status, within]);

  const filter = (next: Record<string, string>) => {
    const params = new URLSearchParams(Object.entries({ agent, status, within, ...next }).filter(([, value]) => value));
    route(`/runs${params.size ? `?${params.toString()}` : ''}`);
  };
  return (
    <section class="runs">
      <h1>Runs</h1>
      <div class="filters">
        <input placeholder="agent" value={agent} onChange={(e) => filter({ agent: e.currentTarget.value })} data-testid="filter-agent" />
        <select value={status} onChange={(e) => filter({ status: e.currentTarget.value })} data-testid="filter-status">
          {STATES.map((state) => (
            <option key={state} value={state}>
              {state || 'any status'}
            </option>
          ))}
        </select>
        <select value={within} onChange={(e) => filter({ within: e.currentTarget.value })} data-testid="filter-within">
          {WITHIN.map(([hours, label]) => (
            <option key={hours} value={hours}>
              {label}
            </option>
          ))}
        </select>
      </div>
      {error ? <p class="error">{error}</p> : null}
      {!runs ? (
        <p>loading…</p>
      ) : (
        <table>
          <thead>
            <tr>
              <th>run</th>
              <th>agent</th>
              <th>status</th>
              <th>prompt</th>
              <th>started</th>
            </tr>
          </thead>
          <tbody>
            {nested(runs).map(({ run, depth }) => (
              <tr key={run.runId} data-testid="run-row" data-run={run.runId} data-depth={depth}>
                <td style={depth ? { paddingLeft: `${0.5 + 1.5 * depth}rem` } : undefined}>
                  {depth ? <span class="below">↳ </span> : null}
                  <a href={`/runs/${encodeURIComponent(run.runId)}`} title={run.runId}>
                    {depth ? run.label : run.runId}
                  </a>
                </td>
                <td>{run.agent ?? ''}</td>
                <td>
                  <span class={`state ${run.state}`}>{run.state}</span>
                  {run.holds ? ` (${run.holds} held)` : ''}
                </td>
                <td class="prompt">{run.prompt ?? ''}</td>
                <td title={run.startedAt}>{age(run.startedAt)} ago</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

export function StartRun({ info }: { info: Info | undefined }) {
  const { route } = useLocation();
  const [agent, setAgent] = useState('');
  const [prompt, setPrompt] = useState('');
  const [sessionId, setSessionId] = useState('');
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const start = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    try {
      const { runId } = await post<{ runId: string }>('/api/runs', { agent, prompt, ...(sessionId ? { sessionId } : {}) });
      route(`/runs/${encodeURIComponent(runId)}`);
    } catch (failure) {
      setError(failure instanceof ApiError ? `${failure.status}: ${failure.message}` : String(failure));
    } finally {
      setBusy(false);
    }
  };
  return (
    <section class="start">
      <h1>Start a run</h1>
      <form onSubmit={(e) => void start(e)} data-testid="start-form">
        <label class="field">
          <span class="label">agent</span>
          <input name="agent" list="agents" value={agent} onInput={(e) => setAgent(e.currentTarget.value)} required />
          <datalist id="agents">
            {(info?.agents ?? []).map((name) => (
              <option key={name} value={name} />
            ))}
          </datalist>
        </label>
        <label class="field">
          <span class="label">prompt</span>
          <textarea name="prompt" rows={4} value={prompt} onInput={(e) => setPrompt(e.currentTarget.value)} required />
        </label>
        <label class="field">
          <span class="label">
            session id <small>(optional: a turn of a server-managed agent's session)</small>
          </span>
          <input name="session" value={sessionId} onInput={(e) => setSessionId(e.currentTarget.value)} />
        </label>
        <button type="submit" disabled={busy}>
          Start
        </button>
        {error ? (
          <p class="error" role="alert">
            {error}
          </p>
        ) : null}
      </form>
    </section>
  );
}

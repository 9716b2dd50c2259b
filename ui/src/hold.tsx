/**
 * One pending hold and the ways to decide it, all made from what the hold declares: approve or
 * deny (with a reason) when its decision takes `{ approved }`; a stand-in output checked against
 * the tool's output schema; the call run again with edited input; or, for any other kind, a form
 * of its decision schema. Nothing is sent until the value passes its schema.
 */
import { useState } from 'preact/hooks';
import { ApiError, post, typedUserName, type Info, type Interrupt } from './api';
import { age, json } from './format';
import { SchemaForm } from './schema-form';
import { takesApproval } from '../../src/core/takes-approval';

const ANY_OUTPUT = {};

/**
 * The decisions a hold takes besides `{ approved }`: the other alternatives of its schema (a
 * hold may take approve, deny, or e.g. a new limit), each with the schema's shared definitions.
 */
function otherDecisions(schema: Record<string, unknown> | undefined): Array<Record<string, unknown>> {
  const alternatives = (schema?.anyOf ?? schema?.oneOf) as Array<Record<string, unknown>> | undefined;
  if (!alternatives) return [];
  const shared = schema?.$defs !== undefined ? { $defs: schema.$defs } : {};
  return alternatives.filter((alternative) => !takesApproval(alternative)).map((alternative) => ({ ...shared, ...alternative }));
}

export function HoldCard({
  runId,
  hold,
  agent,
  onDecided,
  complete = true,
}: {
  runId: string;
  hold: Interrupt;
  agent?: string;
  /** Unused: a decision names whoever "deciding as" shows (typedUserName), never a name a stale page was given. */
  info: Info | undefined;
  onDecided: (summary: string) => void;
  /** False while only the inbox's summary of the hold is known (no input, no schemas yet). */
  complete?: boolean;
}) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const [reason, setReason] = useState('');
  const [mode, setMode] = useState<'none' | 'respond' | 'restart'>('none');
  // The inbox's summary says whether approve and deny decide it; the full hold says by its schema.
  const approvable = complete ? takesApproval(hold.decision) : (hold as { approvable?: boolean }).approvable !== false;
  const others = complete && approvable ? otherDecisions(hold.decision) : [];

  const send = async (decision: Record<string, unknown>, summary: string) => {
    setBusy(true);
    setError(undefined);
    try {
      await post(`/api/runs/${encodeURIComponent(runId)}/decisions`, { interruptId: hold.id, toolName: hold.toolName, ...decision, user: typedUserName() });
      onDecided(summary);
    } catch (failure) {
      setError(failure instanceof ApiError ? `${failure.status}: ${failure.message}` : String(failure));
    } finally {
      setBusy(false);
    }
  };

  const data = Object.entries(hold.data ?? {});
  return (
    <article class="hold" data-testid={`hold-${hold.id}`} data-run={runId}>
      <header>
        <strong class="question">{hold.question ?? hold.message ?? `${hold.kind} of ${hold.toolName ?? 'a call'}`}</strong>
        <span class="meta">
          <span class="badge">{hold.kind}</span>
          {agent ? <span>agent {agent}</span> : null}
          {hold.toolName ? <span>tool {hold.toolName}</span> : null}
          {hold.since ? <span title={hold.since}>waiting {age(hold.since)}</span> : null}
        </span>
        {hold.path?.length ? (
          <div class="path">
            run path:{' '}
            {[runId, ...hold.path].map((id, index) => (
              <span key={id}>
                {index ? ' › ' : ''}
                <a href={`/runs/${encodeURIComponent(id)}`}>{id}</a>
              </span>
            ))}
          </div>
        ) : null}
      </header>
      {hold.input !== undefined ? (
        <details open={JSON.stringify(hold.input).length < 300}>
          <summary>input</summary>
          <pre>{json(hold.input)}</pre>
        </details>
      ) : null}
      {data.length ? (
        <dl class="data">
          {data.map(([key, value]) => (
            <div key={key}>
              <dt>{key}</dt>
              <dd>{typeof value === 'string' ? value : json(value)}</dd>
            </div>
          ))}
        </dl>
      ) : null}
      <div class="actions">
        {approvable ? (
          <>
            <button class="approve" disabled={busy} onClick={() => void send({ approved: true }, `approved ${hold.toolName ?? hold.id}`)}>
              Approve
            </button>
            <input
              class="reason"
              placeholder="reason (optional for approve, shown to the model on deny)"
              value={reason}
              onInput={(e) => setReason(e.currentTarget.value)}
            />
            <button
              class="deny"
              disabled={busy}
              onClick={() => void send({ approved: false, ...(reason ? { reason } : {}) }, `denied ${hold.toolName ?? hold.id}`)}
            >
              Deny
            </button>
          </>
        ) : !complete ? null : (
          <SchemaForm
            schema={hold.decision ?? {}}
            submitLabel="Decide"
            testId="decision-form"
            busy={busy}
            onValid={(value) => void send({ restart: value }, `decided ${hold.id}`)}
          />
        )}
        {!complete ? <span class="empty">loading the hold…</span> : null}
        {complete && (hold.respond ?? 'answer') === 'answer' && hold.toolName ? (
          <button class="link" onClick={() => setMode(mode === 'respond' ? 'none' : 'respond')}>
            respond with a stand-in output
          </button>
        ) : null}
        {complete && hold.toolName && hold.input !== undefined ? (
          <button class="link" onClick={() => setMode(mode === 'restart' ? 'none' : 'restart')}>
            run with edited input
          </button>
        ) : null}
      </div>
      {others.length ? (
        <section class="decide">
          <p>Or decide otherwise:</p>
          {others.map((alternative, index) => (
            <SchemaForm
              key={index}
              schema={alternative}
              submitLabel="Decide"
              testId="decision-form"
              busy={busy}
              onValid={(value) => void send({ restart: value }, `decided ${hold.id}`)}
            />
          ))}
        </section>
      ) : null}
      {mode === 'respond' ? (
        <section class="respond">
          <p>The call is not run; the model gets this as the tool's output{hold.outputSchema ? ', checked against its output schema' : ''}.</p>
          <SchemaForm
            schema={hold.outputSchema ?? ANY_OUTPUT}
            submitLabel="Send stand-in output"
            testId="respond-form"
            busy={busy}
            onValid={(value) => void send({ respond: value }, `answered ${hold.toolName ?? hold.id} with a stand-in`)}
          />
        </section>
      ) : null}
      {mode === 'restart' ? (
        <section class="restart">
          <p>The call runs with this input; every gate checks it again.</p>
          <SchemaForm
            schema={{}}
            initial={hold.input}
            submitLabel="Run with this input"
            testId="restart-form"
            busy={busy}
            onValid={(input) => void send({ restart: approvable ? { approved: true } : true, input }, `ran ${hold.toolName ?? hold.id} with edited input`)}
          />
        </section>
      ) : null}
      {error ? (
        <p class="error" role="alert">
          {error}
        </p>
      ) : null}
    </article>
  );
}

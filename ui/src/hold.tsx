/**
 * One pending hold and the ways to decide it, all made from what the hold declares: approve or
 * deny (with a reason) when its decision takes `{ approved }`; a stand-in output checked against
 * the tool's output schema; the call run again with edited input; or, for any other kind, a form
 * of its decision schema. Nothing is sent until the value passes its schema. Above the forms,
 * what a person deciding needs: the question, the held call and its input, what the user asked,
 * the run holding the call (its agent, a link to its view) and what the agent was doing.
 */
import { useState } from 'preact/hooks';
import { ApiError, post, typedUserName, type HoldView, type Info, type Hold } from './api';
import { age, json } from './format';
import { SchemaForm } from './schema-form';
import { runLabel } from '../../src/core/run-label';
import { takesApproval } from '../../src/core/takes-approval';
import type { DecisionAccepted, HoldVotes } from '../../src/core/holds';

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

/** A hold as a card shows it: in full (from the run's status), with what the inbox's listing adds when it came from there. */
export type ShownHold = Hold & Partial<Pick<HoldView, 'label' | 'prompt' | 'inputText' | 'approvable'>>;

export function HoldCard({
  runId,
  hold,
  agent,
  onDecided,
  complete = true,
  inConversation = false,
}: {
  runId: string;
  hold: ShownHold;
  /** The agent of `runId`, for a hold that does not name its own. */
  agent?: string;
  /** Unused: a decision names whoever "deciding as" shows (typedUserName), never a name a stale page was given. */
  info: Info | undefined;
  onDecided: (summary: string) => void;
  /** False while only the inbox's summary of the hold is known (no input, no schemas yet). */
  complete?: boolean;
  /** Shown under the conversation of `runId` (its run view): what that run was asked and said is there already. */
  inConversation?: boolean;
}) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const [reason, setReason] = useState('');
  const [mode, setMode] = useState<'none' | 'respond' | 'restart'>('none');
  // The inbox's summary says whether approve and deny decide it; the full hold says by its schema.
  const approvable = complete ? takesApproval(hold.decision) : hold.approvable !== false;
  const others = complete && approvable ? otherDecisions(hold.decision) : [];

  const send = async (decision: Record<string, unknown>, summary: string) => {
    setBusy(true);
    setError(undefined);
    try {
      const accepted = await post<DecisionAccepted>(`/api/runs/${encodeURIComponent(runId)}/decisions`, {
        interruptId: hold.id,
        toolName: hold.toolName,
        ...decision,
        user: typedUserName(),
      });
      // A hold put to a vote that this vote did not decide waits for more votes.
      onDecided(
        !accepted.decided.length && accepted.votes
          ? `your vote on ${hold.toolName ?? hold.id} is counted: ${accepted.votes.approvals} of ${accepted.votes.quorum} approvals`
          : summary,
      );
    } catch (failure) {
      setError(failure instanceof ApiError ? `${failure.status}: ${failure.message}` : String(failure));
    } finally {
      setBusy(false);
    }
  };

  const question = hold.question ?? hold.message ?? `${hold.kind} of ${hold.toolName ?? 'a call'}`;
  // What the middleware put in the hold's data, but not the question again (a kind that asks its data's message).
  const data = Object.entries(hold.data ?? {}).filter(([, value]) => value !== question);
  // The run holding the call: a sub-agent's (the last of the path, named by its keys), or `runId` itself.
  const keys = hold.id.split('/').slice(0, -1);
  const heldIn = hold.path?.at(-1) ?? runId;
  const label = hold.label ?? (keys.length ? keys.join('/') : runLabel(runId));
  const nested = Boolean(hold.path?.length);
  const context = !inConversation || nested;
  // `agent` is runId's: a sub-agent's hold from before holds named their agent shows none.
  const shownAgent = hold.agent ?? (nested ? undefined : agent);
  const link = (id: string, text: string, className?: string) => (
    <a class={className} href={`/runs/${encodeURIComponent(id)}`} title={id}>
      {text}
    </a>
  );
  return (
    <article class="hold" data-testid={`hold-${hold.id}`} data-run={runId}>
      <header>
        <strong class="question">{question}</strong>
        <span class="meta">
          <span class="badge">{hold.kind}</span>
          {shownAgent ? <span class="agent">agent {shownAgent}</span> : null}
          {context ? <span>run {link(heldIn, label, 'run-link')}</span> : null}
          {hold.turn !== undefined ? <span>turn {hold.turn}</span> : null}
          {hold.since ? <span title={hold.since}>waiting {age(hold.since)}</span> : null}
        </span>
        {nested ? (
          <div class="path">
            run path:{' '}
            {[runId, ...hold.path!].map((id, index) => (
              <span key={id}>
                {index ? ' › ' : ''}
                {link(id, index ? (keys[index - 1] ?? runLabel(id)) : runLabel(runId))}
              </span>
            ))}
          </div>
        ) : null}
      </header>
      {context && (hold.prompt || hold.asked || hold.modelText) ? (
        <dl class="context" data-testid="hold-context">
          {hold.prompt ? (
            <div>
              <dt>user asked</dt>
              <dd class="prompt">{hold.prompt}</dd>
            </div>
          ) : null}
          {hold.asked && (nested || !hold.prompt) ? (
            <div>
              <dt>{nested ? `${label} was asked` : 'asked'}</dt>
              <dd class="asked">{hold.asked}</dd>
            </div>
          ) : null}
          {hold.modelText ? (
            <div>
              <dt>model said</dt>
              <dd class="model-text">{hold.modelText}</dd>
            </div>
          ) : null}
        </dl>
      ) : null}
      {hold.toolName ? (
        <details class="call" open={hold.input === undefined || JSON.stringify(hold.input).length < 300}>
          <summary>
            call <code>{hold.toolName}</code>
          </summary>
          {hold.input !== undefined ? <pre>{json(hold.input)}</pre> : hold.inputText !== undefined ? <pre class="input-text">{hold.inputText}</pre> : null}
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
      {hold.votes ? <Votes votes={hold.votes} /> : null}
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
        {complete && !hold.votes && (hold.respond ?? 'answer') === 'answer' && hold.toolName ? (
          <button class="link" onClick={() => setMode(mode === 'respond' ? 'none' : 'respond')}>
            respond with a stand-in output
          </button>
        ) : null}
        {complete && !hold.votes && hold.toolName && hold.input !== undefined ? (
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

/** A hold put to a vote: who voted, how many approvals of how many, who may still vote, when it escalates or expires. */
function Votes({ votes }: { votes: HoldVotes }) {
  return (
    <div class="votes" data-testid="hold-votes">
      <strong>
        {votes.approvals} of {votes.quorum} approval{votes.quorum === 1 ? '' : 's'}
      </strong>
      {votes.cast.map((vote) => (
        <span key={vote.by} class={vote.approved ? 'vote approved' : 'vote denied'} title={vote.at}>
          {vote.by} {vote.approved ? 'approved' : 'denied'}
          {vote.escalated ? ' (escalation)' : ''}
        </span>
      ))}
      <span class="may-vote">may still vote: {votes.mayVote.join(', ') || 'no one'}</span>
      {votes.notRequester ? <span>not the requester</span> : null}
      {votes.escalatedTo ? <span>escalated to {votes.escalatedTo.join(', ')}</span> : null}
      {votes.escalateAt ? <span title={votes.escalateAt}>escalates {votes.escalateAt}</span> : null}
      {votes.expiresAt ? <span title={votes.expiresAt}>expires {votes.expiresAt}</span> : null}
    </div>
  );
}

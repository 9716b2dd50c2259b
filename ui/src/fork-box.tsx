/**
 * "Fork from here" under a turn of a run's conversation (docs/fork.md): a new run whose
 * conversation is this one's up to the turn, with the user's message there replaced or added
 * when one is given. A worker checks the fork before it starts; its refusal is shown as said.
 * The page then opens the new run.
 */
import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { ApiError, post } from './api';

export function ForkBox({ runId, turn }: { runId: string; turn: number }) {
  const [open, setOpen] = useState(false);
  const [message, setMessage] = useState('');
  const [error, setError] = useState<string>();
  const [sending, setSending] = useState(false);
  const { route } = useLocation();
  if (!open)
    return (
      <button class="fork" data-testid={`fork-${turn}`} onClick={() => setOpen(true)}>
        fork from here
      </button>
    );
  const send = async (event: Event) => {
    event.preventDefault();
    setSending(true);
    try {
      const started = await post<{ runId: string }>(`/api/runs/${encodeURIComponent(runId)}/fork`, {
        at: turn,
        ...(message.trim() ? { message } : {}),
      });
      setOpen(false);
      route(`/runs/${encodeURIComponent(started.runId)}`);
    } catch (failure) {
      setError(failure instanceof ApiError ? failure.message : String(failure));
      setSending(false);
    }
  };
  return (
    <form class="fork" data-testid={`fork-form-${turn}`} onSubmit={(event) => void send(event)}>
      <textarea
        aria-label="message of the fork"
        placeholder={`Fork after turn ${turn}: the user's message there (empty: go on as it was)`}
        value={message}
        onInput={(event) => setMessage((event.target as HTMLTextAreaElement).value)}
      />
      <button type="submit" disabled={sending}>
        Fork
      </button>
      <button type="button" onClick={() => setOpen(false)}>
        Cancel
      </button>
      {error ? <p class="error">{error}</p> : null}
    </form>
  );
}

/**
 * The box under a running run's conversation that steers it: a user message the run takes at its
 * next model call, or at once (cancelling the model call in flight, never a tool call) when
 * "answer now" is ticked. The run's refusal (it has ended, an empty text) is shown as it said it.
 */
import { useState } from 'preact/hooks';
import { ApiError, post } from './api';
import type { SteerRecord } from '../../src/core/steering';

export function SteerBox({ runId, onSent }: { runId: string; onSent: (summary: string) => void }) {
  const [text, setText] = useState('');
  const [interrupt, setInterrupt] = useState(false);
  const [error, setError] = useState<string>();
  const [sending, setSending] = useState(false);
  const send = async (event: Event) => {
    event.preventDefault();
    setSending(true);
    try {
      const record = await post<SteerRecord>(`/api/runs/${encodeURIComponent(runId)}/steer`, { text, ...(interrupt ? { interrupt: true } : {}) });
      setText('');
      setError(undefined);
      onSent(`steering message sent (${record.state}${record.cancelledModelCall ? '; the model call in flight was cancelled' : ''})`);
    } catch (failure) {
      setError(failure instanceof ApiError ? failure.message : String(failure));
    } finally {
      setSending(false);
    }
  };
  return (
    <form class="steer" data-testid="steer" onSubmit={(event) => void send(event)}>
      <textarea
        aria-label="steering message"
        placeholder="Steer the run: a message its next model call takes"
        value={text}
        onInput={(event) => setText((event.target as HTMLTextAreaElement).value)}
      />
      <label>
        <input type="checkbox" checked={interrupt} onChange={(event) => setInterrupt((event.target as HTMLInputElement).checked)} /> answer now (cancels the
        model call in flight)
      </label>
      <button type="submit" disabled={sending || text.trim() === ''}>
        Steer
      </button>
      {error ? <p class="error">{error}</p> : null}
    </form>
  );
}

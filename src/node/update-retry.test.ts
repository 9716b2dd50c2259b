import { ServiceError } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { retryingUpdate, transientUpdateRefusal } from './update-retry';

/** What the SDK throws when the server refuses an update: a ServiceError whose cause is the gRPC error. */
function refusal(code: number, details: string): ServiceError {
  const grpc = Object.assign(new Error(`${code} ${details}`), { code, details, metadata: {} });
  return new ServiceError('Workflow Update failed', { cause: grpc });
}

describe('retryingUpdate', () => {
  it('sends again after the server refuses an update in flight or aborts it, until it is taken', async () => {
    const answers: unknown[] = [
      refusal(8, 'limit on number of concurrent in-flight updates has been reached (10)'),
      refusal(14, 'workflow update was aborted'),
      'taken',
    ];
    let sent = 0;
    const taken = await retryingUpdate(
      async () => {
        const answer = answers[sent++];
        if (answer instanceof Error) throw answer;
        return answer;
      },
      { what: 'the steer s1' },
    );
    expect({ taken, sent }).toEqual({ taken: 'taken', sent: 3 });
  });

  it('gives up at its deadline naming the server’s cause, and throws any other error at once', async () => {
    const busy = refusal(8, 'limit on number of concurrent in-flight updates has been reached (10)');
    await expect(
      retryingUpdate(
        () => {
          throw busy;
        },
        { what: 'the decision on i3', deadline: Date.now() + 300 },
      ),
    ).rejects.toThrow(
      /^the decision on i3 was not taken: the server refused it \d+ times in [\d.]+ s \(RESOURCE_EXHAUSTED: limit on number of concurrent in-flight updates has been reached \(10\)\); sending it again with the same update id is safe/,
    );
    let sent = 0;
    const other = refusal(14, 'connection reset');
    await expect(
      retryingUpdate(
        () => {
          sent++;
          throw other;
        },
        { what: 'x' },
      ),
    ).rejects.toBe(other);
    expect(sent).toBe(1);
    expect(transientUpdateRefusal(new Error('Workflow Update failed'))).toBeUndefined();
  });
});

import { ApplicationFailure } from '@temporalio/common';
import type { LogEntry } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { conciseLine } from './worker-log';

const timestampNanos = BigInt(Date.UTC(2026, 0, 2, 3, 4, 5)) * 1_000_000n;
const entry = (message: string, meta: Record<string, unknown>): LogEntry => ({ level: 'WARN', message, meta, timestampNanos });

describe('conciseLine', () => {
  it('writes a failed call as one line: the activity, the run, its agent and turn, the attempt, the status and the message', () => {
    const error = ApplicationFailure.create({ type: 'INTERNAL', message: 'tool "charge" failed: declined (thrown at tools/pay.ts:6:9)', nonRetryable: true });
    expect(
      conciseLine(entry('Activity failed', { activityType: 'callTool', workflowId: 'run-1', agent: 'shop', turn: 3, attempt: 2, taskToken: 'x', error })),
    ).toBe(
      '2026-01-02T03:04:05.000Z [WARN] callTool failed in run run-1 (agent shop, turn 3, attempt 2): INTERNAL: tool "charge" failed: declined (thrown at tools/pay.ts:6:9)',
    );
  });

  it('writes a failed run as one line, from the plain Error the workflow thread hands over', () => {
    const error = new Error('tool "charge" failed: declined');
    error.stack = `ApplicationFailure: ${error.message}\n    at failureOf (run-status.ts:1:1)`;
    expect(conciseLine(entry('Workflow failed', { workflowId: 'run-1', error }))).toBe(
      '2026-01-02T03:04:05.000Z [WARN] run run-1 failed: tool "charge" failed: declined',
    );
  });

  it('leaves any other entry whole: other messages, errors that are not ApplicationFailures', () => {
    expect(conciseLine(entry('Workflow task failed', { error: ApplicationFailure.create({ message: 'x' }) }))).toBeUndefined();
    expect(conciseLine(entry('Activity failed', { error: new TypeError('a bug') }))).toBeUndefined();
    expect(conciseLine(entry('Activity failed', {}))).toBeUndefined();
  });
});

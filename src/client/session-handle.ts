/**
 * A handle on one session of a server-managed agent (session: 'server'): send a message (the
 * `invoke` update, with update-with-start so the first starts the session; each runs as one generate run), read its
 * snapshots, wait for one to settle, abort the run in flight. Node side.
 */
import { DEFAULT_FAIRNESS, priorityOf, type FairnessConfig } from '../core/fairness';
import { WithStartWorkflowOperation, WorkflowNotFoundError, type Client } from '@temporalio/client';
import { randomUUID } from 'node:crypto';
import type { SteerRecord } from '../core/steering';
import { KeelError } from '../core/errors';
import type { Message } from '../core/messages';
import { sessionWorkflowId, type InvokeOutput, type Snapshot } from '../core/session';
import { sessionIdProblem } from '../core/session';
import { SESSION_WORKFLOW, abortSessionUpdate, currentRunQuery, invokeUpdate, snapshotQuery, steerUpdate, waitForSnapshotUpdate } from '../core/protocol';
import { versioningMemo, type RunVersioning } from '../core/versioning';
import { principalField, principalMemo, type Principal } from '../core/principal';
import { assertInputFits } from './input-limit';
import { runErrorOf } from '../node/run-errors';
import { unknownSteerError } from './unknown-update';
import { retryingUpdate } from '../node/update-retry';

/** Options of `new SessionHandle`. */
export interface SessionHandleOptions {
  client: Client;
  agent: string;
  sessionId: string;
  /** Task queue the session workflow is started on. */
  taskQueue: string;
  /** How the session's runs move between builds (`deployment.agents`); absent: the worker's default. */
  versioning?: RunVersioning | undefined;
  /** Who sends through this handle (docs/tenants.md): a session it starts belongs to them, and each turn records them. */
  principal?: Principal;
  /** The config's `fairness`: a session it starts takes the interactive priority (the defaults when absent). */
  fairness?: FairnessConfig;
}

/** Options of `SessionHandle.send`. */
export interface SendOptions {
  /** Answer at once with a pending snapshot; the run goes on (follow it by its `runId`). */
  detach?: boolean;
  /** Start the run from this snapshot's state instead of the latest. */
  snapshotId?: string;
  /** Makes the send idempotent: sent again with the same id, it gets the first answer instead of starting a second run. */
  requestId?: string;
  /**
   * Sends only to a session that belongs to exactly this principal (or starts one of this
   * handle's): what an access check found, held even if another starts the session meanwhile.
   * Refused NOT_FOUND otherwise (docs/tenants.md).
   */
  ifBelongsTo?: Principal;
}

/** One session of a server-managed agent. */
export class SessionHandle {
  private readonly client: Client;
  readonly agent: string;
  readonly sessionId: string;
  private readonly taskQueue: string;
  private readonly versioning: RunVersioning | undefined;
  private readonly principal: Principal;
  private readonly fairness: FairnessConfig;
  /** The session's workflow id. */
  readonly workflowId: string;

  constructor({ client, agent, sessionId, taskQueue, versioning, principal = {}, fairness = DEFAULT_FAIRNESS }: SessionHandleOptions) {
    const problem = sessionIdProblem(sessionId);
    if (problem) throw new KeelError('INVALID_ARGUMENT', problem);
    this.client = client;
    this.agent = agent;
    this.sessionId = sessionId;
    this.taskQueue = taskQueue;
    this.versioning = versioning;
    this.principal = principal;
    this.fairness = fairness;
    this.workflowId = sessionWorkflowId(agent, sessionId);
  }

  /** Sends a prompt or messages, which run as one generate run of the session. Starts the session if it is new. */
  async send(prompt: string | Message[], { detach = false, snapshotId, requestId, ifBelongsTo }: SendOptions = {}): Promise<InvokeOutput> {
    const messages: Message[] = typeof prompt === 'string' ? [{ role: 'user', content: [{ text: prompt }] }] : prompt;
    assertInputFits(this.client, messages, `the messages sent to session "${this.sessionId}"`);
    // One update id for every attempt of this send: the server takes it at most once.
    const updateId = requestId ?? randomUUID();
    const { principal: sender } = principalField(this.principal);
    const memo = { ...versioningMemo(this.versioning), ...principalMemo(this.principal) };
    // An operation is used once: each attempt gets its own.
    const attempt = () =>
      this.client.workflow.executeUpdateWithStart(invokeUpdate, {
        args: [
          {
            messages,
            detach,
            ...(snapshotId ? { snapshotId } : {}),
            ...(requestId ? { requestId } : {}),
            ...(sender ? { sentBy: sender } : {}),
            ...(ifBelongsTo ? { ifBelongsTo } : {}),
          },
        ],
        updateId,
        startWorkflowOperation: new WithStartWorkflowOperation(SESSION_WORKFLOW, {
          workflowId: this.workflowId,
          taskQueue: this.taskQueue,
          args: [{ agent: this.agent, sessionId: this.sessionId }],
          workflowIdConflictPolicy: 'USE_EXISTING',
          // A person waits on each turn: the session and the runs of its turns go before other work.
          priority: priorityOf(this.fairness, 'interactive', this.principal.tenant),
          ...(Object.keys(memo).length ? { memo } : {}),
        }),
      });
    try {
      return await retryingUpdate(attempt, { what: `the message sent to session "${this.sessionId}"` });
    } catch (error) {
      throw runErrorOf(error);
    }
  }

  /** A snapshot by id, or the latest; NOT_FOUND when there is none. */
  async snapshot(snapshotId?: string): Promise<Snapshot> {
    let snapshot: Snapshot | null;
    try {
      snapshot = await this.client.workflow.getHandle(this.workflowId).query(snapshotQuery, ...(snapshotId ? [snapshotId] : []));
    } catch (error) {
      const failure = runErrorOf(error);
      throw failure.status === 'NOT_FOUND' ? new KeelError('NOT_FOUND', `session "${this.sessionId}" of agent "${this.agent}" does not exist`) : failure;
    }
    if (snapshot) return snapshot;
    throw new KeelError(
      'NOT_FOUND',
      snapshotId
        ? `snapshot "${snapshotId}" not found in session "${this.sessionId}" of agent "${this.agent}"`
        : `session "${this.sessionId}" of agent "${this.agent}" has no snapshot yet`,
    );
  }

  /** Waits until a snapshot settles, then returns it. */
  async waitForSnapshot(snapshotId: string): Promise<Snapshot> {
    try {
      const updateId = randomUUID();
      return await retryingUpdate(
        () => this.client.workflow.getHandle(this.workflowId).executeUpdate(waitForSnapshotUpdate, { args: [snapshotId], updateId }),
        { what: `the wait for snapshot ${snapshotId}` },
      );
    } catch (error) {
      throw runErrorOf(error);
    }
  }

  /**
   * Steers the session's run in flight (its generate run): the `steer` update of that run, so a
   * message is taken at the run's next model call (`interrupt`: at once, cancelling the model
   * call in flight). FAILED_PRECONDITION, saying why, when none runs.
   */
  async steer(text: string, { interrupt, steerId = randomUUID() }: { interrupt?: boolean; steerId?: string } = {}): Promise<SteerRecord> {
    const handle = this.client.workflow.getHandle(this.workflowId);
    let current: Snapshot | null;
    try {
      current = await handle.query(currentRunQuery);
    } catch (error) {
      const failure = runErrorOf(error);
      throw failure.status === 'NOT_FOUND' ? new KeelError('NOT_FOUND', `session "${this.sessionId}" of agent "${this.agent}" does not exist`) : failure;
    }
    if (!current) {
      const latest = await handle.query(snapshotQuery).catch(() => null);
      throw new KeelError(
        'FAILED_PRECONDITION',
        `session "${this.sessionId}" of agent "${this.agent}" has no run in flight (${latest ? `its latest run, snapshot ${latest.snapshotId}, is ${latest.status}` : 'it has had none yet'}); nothing to steer`,
      );
    }
    const latest = current;
    try {
      return await retryingUpdate(
        () =>
          this.client.workflow
            .getHandle(latest.runId)
            .executeUpdate(steerUpdate, { args: [{ text, ...(interrupt ? { interrupt: true } : {}) }], updateId: steerId }),
        { what: `the steer ${steerId}` },
      );
    } catch (error) {
      const unknown = unknownSteerError(error, latest.runId);
      if (unknown) throw unknown;
      if (error instanceof WorkflowNotFoundError)
        throw new KeelError(
          'FAILED_PRECONDITION',
          `session "${this.sessionId}" of agent "${this.agent}": its run "${latest.runId}" has ended; nothing to steer`,
        );
      throw runErrorOf(error);
    }
  }

  /** Stops the run in flight; returns its snapshot (`aborting`), or null when none runs. */
  async abort(): Promise<Snapshot | null> {
    try {
      const updateId = randomUUID();
      return await retryingUpdate(() => this.client.workflow.getHandle(this.workflowId).executeUpdate(abortSessionUpdate, { updateId }), {
        what: `the abort of session "${this.sessionId}"`,
      });
    } catch (error) {
      throw runErrorOf(error);
    }
  }
}

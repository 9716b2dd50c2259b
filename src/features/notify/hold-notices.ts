/**
 * Hold notices, the workflow half (docs/notify.md; src/core/hold-notices.ts says what a notice
 * is): a run whose worker has webhooks (`notify:`, the agent's spec says how many) POSTs each
 * notice to each webhook from an activity that retries for a day, and goes on at once. A notice
 * still undelivered when the run closes is handed to a delivery workflow of its own, abandoned by
 * the run, so a webhook that is down loses nothing and delays nothing. A run whose spec names no
 * webhooks (every run resolved before keel had them) sends none, so recorded histories replay as
 * they ran.
 */
import { ParentClosePolicy, setWorkflowOptions, startChild, workflowInfo } from '@temporalio/workflow';
import { proxyDoor } from '../../engine/activities';
import { deliverHoldNoticeDoor } from './notice-door';
import { NOTICE_WORKFLOW, type HoldEvent, type NoticeDeliveryInput } from '../../core/hold-notices';
import type { AgentSpec } from '../../core/run';
import { inheritedMemo, sessionVersioningOptions } from '../../engine/versioning';

/** A webhook gets a notice within a day, or never: retried with backoff up to every 10 minutes, each POST given 30 s. */
const deliverHoldNotice = proxyDoor(deliverHoldNoticeDoor, {
  startToCloseTimeout: '30 seconds',
  scheduleToCloseTimeout: '1 day',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 minutes' },
});

/** Delivers one notice to every webhook (each on its own, so one that is down delays no other): in the run, or as a workflow of its own. */
export async function keelHoldNotice({ id, notice, targets }: NoticeDeliveryInput): Promise<void> {
  await Promise.all(Array.from({ length: targets }, (_, target) => deliverHoldNotice({ id, notice, target })));
}
setWorkflowOptions(sessionVersioningOptions, keelHoldNotice);

/** The notices of one run: each delivered by activities of the run as it happens; `flush` hands what is still undelivered to a workflow of its own. */
export class HoldNotices {
  /** Deliveries under way: the input, and whether every webhook has it. */
  private readonly pending = new Map<string, { input: NoticeDeliveryInput; delivered: boolean }>();

  constructor(private readonly agent: () => AgentSpec | undefined) {}

  /** Starts delivering `notice`, unless the run's worker has no webhooks; never waits for it. */
  send(notice: HoldEvent): void {
    const agent = this.agent();
    if (!agent?.notify) return;
    const { workflowId, runId } = workflowInfo();
    // One id per run, hold and event (and vote): receivers tell a retried POST by it.
    const vote = notice.type === 'hold.voted' ? `/${notice.hold.votes?.cast.length ?? 0}` : '';
    const id = `${workflowId}/notice/${runId}/${notice.hold.id}/${notice.type}${vote}`;
    const input: NoticeDeliveryInput = { id, notice: { ...notice, runId: workflowId, agent: agent.name }, targets: agent.notify };
    const entry = { input, delivered: false };
    this.pending.set(id, entry);
    void keelHoldNotice(input).then(
      () => {
        entry.delivered = true;
        this.pending.delete(id);
      },
      () => undefined,
    );
  }

  /**
   * The run is closing (or continuing as new): each notice not yet delivered goes on in a workflow
   * of its own, abandoned by the run so it outlives it (a POST under way may then arrive twice,
   * with the same delivery id). Waits only for those workflows to start, never for a webhook.
   */
  async flush(): Promise<void> {
    const undelivered = [...this.pending.values()].filter((entry) => !entry.delivered);
    this.pending.clear();
    await Promise.all(
      undelivered.map(({ input }) =>
        startChild(NOTICE_WORKFLOW, {
          workflowId: input.id,
          args: [input],
          parentClosePolicy: ParentClosePolicy.ABANDON,
          staticSummary: `${input.notice.type} ${input.notice.hold.id} of ${input.notice.runId}`,
          ...inheritedMemo(),
        }).catch(() => undefined),
      ),
    );
  }
}

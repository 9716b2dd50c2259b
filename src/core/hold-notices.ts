/**
 * Hold notices (docs/notify.md): what a run tells the webhooks of `notify:` when one of its holds
 * is raised, decided or expires. The run starts a small workflow per notice (its id names the
 * run, the hold and the event, so a notice is never sent twice for one event), which POSTs it to
 * each webhook from an activity with retries; the run itself never waits for a webhook. Pure:
 * safe in workflow code.
 */
import { z } from 'zod';
import { DecisionRecordSchema } from './holds';
import { HoldSchema } from './run';

/** The workflow type of one notice's delivery. */
export const NOTICE_WORKFLOW = 'keelHoldNotice';

/**
 * What happened to a hold: raised, decided, expired; for a hold put to a vote (docs/auth.md) also
 * each vote that did not decide it (`hold.voted`) and its escalation (`hold.escalated`).
 */
export const HoldNoticeTypeSchema = z.enum(['hold.raised', 'hold.decided', 'hold.expired', 'hold.voted', 'hold.escalated']);
export type HoldNoticeType = z.infer<typeof HoldNoticeTypeSchema>;

/** One notice, as the run gives it (the webhook's body adds its id, and links for a raised hold). */
export const HoldNoticeSchema = z.object({
  type: HoldNoticeTypeSchema,
  /** When it happened (the run's clock, ISO 8601). */
  at: z.string(),
  runId: z.string(),
  agent: z.string(),
  hold: HoldSchema,
  /** How it was decided (`hold.decided`, `hold.expired`). */
  decision: DecisionRecordSchema.optional(),
});
export type HoldNotice = z.infer<typeof HoldNoticeSchema>;
/** A notice as the hold board tells it (the run and its agent are added where it is sent). */
export type HoldEvent = Omit<HoldNotice, 'runId' | 'agent'>;

/** The input of a notice's delivery (in the run, or its own workflow): the notice, its id, and how many webhooks it goes to. */
export interface NoticeDeliveryInput {
  id: string;
  notice: HoldNotice;
  targets: number;
}

/** Told when one of the run's own holds is raised, voted on, escalated, decided or expires (the metrics; Notify's notices). */
export type HoldObserver = (event: HoldEvent) => void;

/** The input of the `deliverHoldNotice` activity: one notice to the webhook at index `target` of `notify:`. */
export const DeliverNoticeInputSchema = z.object({ id: z.string(), notice: HoldNoticeSchema, target: z.number().int().min(0) });
export type DeliverNoticeInput = z.infer<typeof DeliverNoticeInputSchema>;

/**
 * Notify's one activity, declared (docs/notify.md): the workflow half proxies it
 * (hold-notices.ts), the Node half implements it (activities/deliver-notice.ts). Pure: runs in
 * the workflow.
 */
import { z } from 'zod';
import { DeliverNoticeInputSchema } from '../../core/hold-notices';
import { defineActivity } from '../../middleware/activity-door';

/** Posts one hold notice to one webhook of `notify:`; throws, to be retried, when the webhook does not take it. */
export const deliverHoldNoticeDoor = defineActivity({
  name: 'deliverHoldNotice',
  input: DeliverNoticeInputSchema,
  output: z.void(),
  describe: ({ notice }) => `notice ${notice.type} of hold ${notice.hold.id}`,
});

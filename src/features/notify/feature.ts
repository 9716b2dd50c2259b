/**
 * Notify as a built-in (docs/notify.md): no middleware, only its part of each run, which
 * watches the run's holds (a hold observer) and sends each thing that happens to one to the
 * worker's webhooks, and when the run ends hands what is still undelivered to a workflow of its
 * own (hold-notices.ts). Pure: runs in the workflow.
 */
import type { Feature } from '../feature';
import { HoldNotices } from './hold-notices';

/** Hold notices to the webhooks of `notify:`. */
export const notifyFeature: Feature = {
  name: 'notify',
  run: ({ spec }) => {
    const notices = new HoldNotices(spec);
    return { observe: (event) => notices.send(event), settle: () => notices.flush() };
  },
};

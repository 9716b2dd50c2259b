/**
 * `/decide/<token>`: where a decision link of a webhook's notice lands (docs/notify.md). Opening
 * it (GET) shows the held call and asks to confirm, and decides nothing, so a link unfurled by a
 * chat app or prefetched by a mail scanner is harmless; the confirmation (a POST from that page)
 * decides, recorded as `decidedBy: link` (or, with auth on, as the verified identity). Each request checks the link (keel signed it, it has not
 * expired) and that its hold still waits with the input the link was made for: a decided hold or
 * a call restarted with edited input voids it. The link is its own credential: these paths need
 * no UI token, and the guard's Origin check still holds for the confirmation. Node side.
 */
import type { Context, Hono } from 'hono';
import type { KeelClient } from '../client/keel-client';
import type { Decider } from '../protocols/chat';
import { KeelError, toKeelError } from '../core/errors';
import type { Hold } from '../core/run';
import { approvalCount } from '../core/approvers';
import { inputFingerprint, readDecisionLink, type DecisionLink } from '../security/decision-links';
import type { SigningKeys } from '../security/signing-keys';
import type { Access } from '../security/access';

/** The path decision links open. */
export const DECIDE_PATH = '/decide';

const escape = (text: string): string => text.replace(/[&<>"']/g, (char) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[char]!);

/** A small page of its own (the UI's page is a client app; this one works without script). */
function page(c: Context, title: string, body: string, status = 200) {
  return c.html(
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><meta name="referrer" content="no-referrer"><title>${escape(title)}</title>` +
      `<style>body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem}pre{background:#f4f4f4;padding:.75rem;overflow:auto}button{font:inherit;padding:.4rem 1.2rem}</style>` +
      `</head><body><h1>${escape(title)}</h1>${body}</body></html>`,
    status as 200,
  );
}

/** The hold a link decides, checked: signed by keel, not expired, still waiting, with the same input. */
async function heldFor(client: KeelClient, keys: SigningKeys, token: string, access: Access): Promise<{ link: DecisionLink; hold: Hold }> {
  const link = await readDecisionLink(keys, token);
  let holds: Hold[];
  try {
    // A link made for another's run decides nothing for whoever may not decide that run (with auth on), and says no more than a missing run.
    await access.check(client.temporal, link.runId, 'decide');
    holds = await client.getHandle(link.runId).pendingHolds();
  } catch (error) {
    const failure = toKeelError(error);
    if (failure.status === 'NOT_FOUND') throw new KeelError('FAILED_PRECONDITION', `run ${link.runId} no longer exists`);
    throw failure;
  }
  const hold = holds.find((pending) => pending.id === link.holdId && !pending.path?.length);
  if (!hold)
    throw new KeelError(
      'FAILED_PRECONDITION',
      `hold ${link.holdId} of run ${link.runId} no longer waits: it was decided (this link works once) or the run moved on`,
    );
  if (inputFingerprint(hold.input) !== link.input)
    throw new KeelError(
      'FAILED_PRECONDITION',
      `hold ${link.holdId} of run ${link.runId} now holds another input than this link was made for: decide it in keel’s inbox`,
    );
  return { link, hold };
}

/** Serves decision links on `app`, checked with the workers' signing keys (`keys`, read on the first link). */
export function decisionLinkRoutes(
  app: Hono,
  {
    client,
    keys: signingKeys,
    decider,
    access,
  }: { client: KeelClient; keys: () => SigningKeys; decider: (request: Request, fallback: string) => Decider; access: (request: Request) => Access },
): void {
  const refused = (c: Context, error: unknown) => {
    const failure = toKeelError(error);
    const status = failure.status === 'PERMISSION_DENIED' ? 403 : failure.status === 'FAILED_PRECONDITION' ? 410 : failure.status === 'NOT_FOUND' ? 404 : 500;
    return page(c, 'This link cannot decide', `<p>${escape(failure.message)}</p>`, status);
  };

  app.get(`${DECIDE_PATH}/:token`, async (c) => {
    try {
      const { link, hold } = await heldFor(client, signingKeys(), c.req.param('token'), access(c.req.raw));
      const verb = link.action === 'approve' ? 'Approve' : 'Deny';
      const question = hold.question ?? `may ${hold.toolName ?? 'the held call'} run?`;
      return page(
        c,
        `${verb} this call?`,
        `<p><strong>${escape(hold.agent ?? '')}</strong> asks: ${escape(question)}</p>` +
          `<p>Run <code>${escape(link.runId)}</code>, hold <code>${escape(hold.id)}</code>, tool <code>${escape(hold.toolName ?? hold.kind)}</code>:</p>` +
          `<pre>${escape(JSON.stringify(hold.input ?? {}, null, 2))}</pre>` +
          `<form method="post">${link.action === 'deny' ? '<p><label>Reason <input name="reason" maxlength="500"></label></p>' : ''}<button type="submit">${verb}</button></form>`,
      );
    } catch (error) {
      return refused(c, error);
    }
  });

  app.post(`${DECIDE_PATH}/:token`, async (c) => {
    try {
      const { link } = await heldFor(client, signingKeys(), c.req.param('token'), access(c.req.raw));
      const form: Record<string, unknown> = await c.req.parseBody().catch(() => ({}));
      const given = form.reason;
      const reason = typeof given === 'string' && given.trim() ? given.trim().slice(0, 500) : undefined;
      const approved = link.action === 'approve';
      const accepted = await client
        .getHandle(link.runId)
        .decide(decider(c.req.raw, 'link')(link.runId, { interruptId: link.holdId, approved, ...(reason ? { reason } : {}) }), { timeoutMs: 15_000 });
      // A hold put to a vote that this vote did not decide: say where the vote stands.
      if (!accepted.decided.length && accepted.votes) {
        const { approvals, quorum, mayVote } = accepted.votes;
        return page(
          c,
          'Your vote is counted',
          `<p>Hold <code>${escape(link.holdId)}</code> of run <code>${escape(link.runId)}</code> has ${approvals} of ${approvalCount(quorum)} and waits for more: ${escape(mayVote.join(', ') || 'no one else')} may still vote.</p>`,
        );
      }
      return page(
        c,
        approved ? 'Approved' : 'Denied',
        `<p>Hold <code>${escape(link.holdId)}</code> of run <code>${escape(link.runId)}</code> is ${approved ? 'approved' : 'denied'}; the run goes on.</p>`,
      );
    } catch (error) {
      return refused(c, error);
    }
  });
}

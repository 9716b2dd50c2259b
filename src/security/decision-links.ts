/**
 * Decision links (docs/notify.md): the Approve and Deny links a webhook's notice carries. A link
 * is a token signed (HS256, with `jose`) with a key derived from the workers' signing key, so a
 * keel server that has that key can check it and nobody else can make one. It names the run, the
 * hold, what it does (approve or deny), a fingerprint of the held call's input, and when it
 * expires. A link decides only while its hold waits with that same input, so it works once: a
 * decided hold, or a call restarted with edited input, voids it. Opening a link shows the hold and
 * asks to confirm; only the confirmation decides. Node side.
 */
import { createHash } from 'node:crypto';
import { errors, jwtVerify, SignJWT } from 'jose';
import { z } from 'zod';
import { KeelError } from '../core/errors';
import { canonicalJson, type SigningKeys } from './signing-keys';

const ISSUER = 'keel';
const AUDIENCE = 'keel-decision-link';

/** What a link decides. */
export const LinkActionSchema = z.enum(['approve', 'deny']);
export type LinkAction = z.infer<typeof LinkActionSchema>;

/** What a link's token says. */
export const DecisionLinkSchema = z.object({
  runId: z.string().min(1),
  holdId: z.string().min(1),
  action: LinkActionSchema,
  /** The held call's input, as `inputFingerprint` gives it. */
  input: z.string().min(1),
});
export type DecisionLink = z.infer<typeof DecisionLinkSchema>;

/** A fingerprint of a held call's input: its canonical JSON, hashed. */
export function inputFingerprint(input: unknown): string {
  return createHash('sha256')
    .update(canonicalJson(input ?? null))
    .digest('base64url');
}

/** The HS256 key of links: derived from the current signing key, so it never appears anywhere itself. */
const linkKey = (keys: SigningKeys): Uint8Array => new TextEncoder().encode(keys.sign({ purpose: 'keel decision links' }));

/** A link's token, valid for `ttlMs`. */
export async function signDecisionLink(keys: SigningKeys, link: DecisionLink, ttlMs: number): Promise<string> {
  return new SignJWT({ hold: link.holdId, act: link.action, fp: link.input })
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuer(ISSUER)
    .setAudience(AUDIENCE)
    .setSubject(link.runId)
    .setIssuedAt()
    .setExpirationTime(new Date(Date.now() + ttlMs))
    .sign(linkKey(keys));
}

/** What a token says, when it is a link keel signed and it has not expired; else PERMISSION_DENIED saying why. */
export async function readDecisionLink(keys: SigningKeys, token: string): Promise<DecisionLink> {
  let payload: Record<string, unknown>;
  try {
    ({ payload } = await jwtVerify(token, linkKey(keys), { issuer: ISSUER, audience: AUDIENCE, algorithms: ['HS256'] }));
  } catch (error) {
    if (error instanceof errors.JWTExpired)
      throw new KeelError('PERMISSION_DENIED', 'this decision link has expired: decide in keel’s inbox, or with keel decide');
    throw new KeelError('PERMISSION_DENIED', 'this is not a decision link keel signed (it was changed, or signed with another key)');
  }
  const parsed = DecisionLinkSchema.safeParse({ runId: payload.sub, holdId: payload.hold, action: payload.act, input: payload.fp });
  if (!parsed.success) throw new KeelError('PERMISSION_DENIED', 'this decision link names no hold');
  return parsed.data;
}

/**
 * Who asks keel serve (docs/auth.md): an OIDC bearer token verified against the issuer's keys
 * (signature, issuer, audience, expiry, with `jose`), or the user a trusted proxy names, from the
 * proxy's own address only. A decision from a verified identity is recorded as its subject and
 * carries a proof, signed with the workers' signing key, of who decided (with their groups), which
 * the run checks against its agent's approver rules. Node side.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { createLocalJWKSet, createRemoteJWKSet, errors, jwtVerify, type JWTVerifyGetKey } from 'jose';
import { ConfigError } from '../config/load';
import type { AuthConfig } from '../config/schema';
import { deciderSubject } from '../core/approvers';
import { KeelError } from '../core/errors';
import type { Decision } from '../core/holds';
import type { SigningKeys } from './signing-keys';

/** A verified identity. */
export interface Identity {
  subject: string;
  groups: string[];
  /** The identity's tenant (`auth.tenantClaim`, `trustedProxy.tenantHeader`), when it has one. */
  tenant?: string;
}

/** Verifies who sends `request` (its peer's address given); UNAUTHENTICATED saying why in one line. */
export type Authenticate = (request: Request, peer: string | undefined) => Promise<Identity>;

const unauthenticated = (message: string) => new KeelError('UNAUTHENTICATED', message);

/** The authenticator `auth` describes; a JWKS file that cannot be read is a ConfigError now. */
export function authenticator(auth: AuthConfig, baseDir: string): Authenticate {
  if ('trustedProxy' in auth) {
    const { header, groupsHeader, tenantHeader, from } = auth.trustedProxy;
    return (request, peer) => {
      const address = peer?.replace(/^::ffff:/, '');
      if (!address || !from.includes(address))
        return Promise.reject(
          unauthenticated(`requests must come through the trusted proxy (auth.trustedProxy.from); this one came from ${address ?? 'an unknown address'}`),
        );
      const subject = request.headers.get(header)?.trim();
      if (!subject) return Promise.reject(unauthenticated(`the proxy named no user (no ${header} header)`));
      const groups = groupsHeader
        ? (request.headers.get(groupsHeader) ?? '')
            .split(',')
            .map((group) => group.trim())
            .filter(Boolean)
        : [];
      const tenant = tenantHeader ? request.headers.get(tenantHeader)?.trim() : undefined;
      return Promise.resolve({ subject, groups, ...(tenant ? { tenant } : {}) });
    };
  }
  const { issuer, audience, jwks, groupsClaim, tenantClaim } = auth;
  let keys: JWTVerifyGetKey;
  if (/^https?:\/\//.test(jwks)) keys = createRemoteJWKSet(new URL(jwks));
  else {
    const file = resolve(baseDir, jwks);
    try {
      keys = createLocalJWKSet(JSON.parse(readFileSync(file, 'utf8')) as Parameters<typeof createLocalJWKSet>[0]);
    } catch (error) {
      throw new ConfigError(`auth.jwks: cannot read the issuer's keys from ${file}: ${(error as Error).message}`);
    }
  }
  return async (request) => {
    const token = /^Bearer (\S+)$/.exec(request.headers.get('authorization') ?? '')?.[1];
    if (!token) throw unauthenticated('send an OIDC token of your issuer: Authorization: Bearer <token>');
    let payload: Record<string, unknown>;
    try {
      ({ payload } = await jwtVerify(token, keys, { issuer, audience }));
    } catch (error) {
      if (error instanceof errors.JWTExpired) throw unauthenticated('the token has expired: get a new one from your issuer');
      if (error instanceof errors.JWTClaimValidationFailed) {
        if (error.claim === 'aud')
          throw unauthenticated(`the token is for another audience (${JSON.stringify(error.payload.aud)}); keel serve takes tokens for "${audience}"`);
        if (error.claim === 'iss')
          throw unauthenticated(`the token is from another issuer (${JSON.stringify(error.payload.iss)}); keel serve takes tokens of "${issuer}"`);
        throw unauthenticated(`the token's ${error.claim} claim is not valid: ${error.message}`);
      }
      throw unauthenticated(`the token does not verify against the issuer's keys (${(error as Error).message})`);
    }
    if (typeof payload.sub !== 'string' || !payload.sub) throw unauthenticated('the token names no subject (sub)');
    const claimed = payload[groupsClaim];
    const groups = Array.isArray(claimed) ? claimed.filter((group): group is string => typeof group === 'string') : [];
    const tenant = payload[tenantClaim];
    return { subject: payload.sub, groups, ...(typeof tenant === 'string' && tenant ? { tenant } : {}) };
  };
}

/** `decision` for run `runId` as `identity` decides it: recorded as its subject, with its groups and a proof of both. */
export function vouched(keys: SigningKeys, identity: Identity, runId: string, decision: Decision): Decision {
  const signed: Decision = { ...decision, decidedBy: identity.subject, decidedByGroups: [...identity.groups].sort() };
  return { ...signed, decidedByProof: keys.sign(deciderSubject(runId, signed)) };
}

/**
 * Whom a run belongs to (docs/tenants.md): its owner (the verified subject that started it) and
 * its tenant. A client sets them in the run's memo as it starts the run; a run hands them down
 * to every run it starts (sub-agents, background tasks, a session's turns), and a fork or an
 * eval case copies its source's. The memo is the record because Temporal answers it without a
 * worker (describe, list). Pure: safe on both sides.
 */
import { z } from 'zod';
import { KeelError } from './errors';
import { describeZodError } from './schema-errors';

/** The memo key holding a run's principal. */
export const PRINCIPAL_MEMO_KEY = 'keelPrincipal';

/** A tenant or an owner: what a search attribute of type Keyword holds well. */
const NameSchema = z.string().min(1).max(256);

/** Whom a run belongs to; a run started with neither (no `auth:`, a worker's own client) belongs to no one. */
export interface Principal {
  tenant?: string;
  owner?: string;
}

export const PrincipalSchema: z.ZodType<Principal, Principal> = z.object({ tenant: NameSchema.optional(), owner: NameSchema.optional() }).strict();

/** The principal a memo records; none when it records none, or one that is not a principal. */
export function principalOfMemo(memo: Record<string, unknown> | undefined): Principal {
  const parsed = PrincipalSchema.safeParse(memo?.[PRINCIPAL_MEMO_KEY]);
  return parsed.success ? parsed.data : {};
}

/** `{ principal }` when it names someone (a tenant or an owner), else nothing: how a record carries it. */
export function principalField(principal: Principal | undefined): { principal?: Principal } {
  return principal?.tenant || principal?.owner ? { principal } : {};
}

/** The memo entry recording `principal` (none when it names no one). */
export function principalMemo(principal: Principal | undefined): Record<string, Principal> {
  const { principal: named } = principalField(principal);
  return named ? { [PRINCIPAL_MEMO_KEY]: named } : {};
}

/** `given` as a principal (undefined fields dropped); INVALID_ARGUMENT, naming the field, when a name is empty or over 256 characters. */
export function checkedPrincipal(given: { tenant?: string | undefined; owner?: string | undefined }): Principal {
  const kept = Object.fromEntries(Object.entries(given).filter(([, value]) => value !== undefined));
  const parsed = PrincipalSchema.safeParse(kept);
  if (!parsed.success) throw new KeelError('INVALID_ARGUMENT', `tenant and owner: ${describeZodError(parsed.error)}`);
  return parsed.data;
}

/** True when `a` and `b` name the same tenant and owner (both absent counts as the same). */
export function samePrincipal(a: Principal, b: Principal): boolean {
  return a.tenant === b.tenant && a.owner === b.owner;
}

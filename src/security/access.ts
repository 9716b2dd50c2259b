/**
 * Who may do what to a run (docs/tenants.md): the one access check every surface of keel serve
 * calls before it reads or changes a run (the UI's API, its event streams, the chat endpoint,
 * MCP, A2A, decision links). A run belongs to its principal (its memo: core/principal.ts); the
 * config's `access:` rules say, per action, whose verified identity may act on it. A refusal is
 * the same NOT_FOUND a missing run gets, so ids leak nothing. Without `auth:` everything is
 * allowed (one local user), as before. Node side.
 */
import type { Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { AccessConfig, KeelConfig } from '../config/schema';
import { KeelError } from '../core/errors';
import { principalOfMemo, type Principal } from '../core/principal';
import { sessionWorkflowId } from '../core/session';
import { KEEL_OWNER, KEEL_TENANT, queryString } from '../core/search-attributes';
import type { ListScope } from '../node/list-executions';
import type { Identity } from './identity';

/** What one may do to a run. */
export type AccessAction = keyof AccessConfig;

/** The access of one verified identity (or, without `auth:`, of the one local user). */
export interface Access {
  /** Whom a run this identity starts belongs to: its tenant and its subject as owner (empty without `auth:`). */
  readonly principal: Principal;
  /** Whether this identity may do `action` to a run of `principal`. */
  may(action: AccessAction, principal: Principal): boolean;
  /** Resolves when this identity may do `action` to the run; NOT_FOUND (`no run "<id>" exists`) when it may not, or (with `auth:`) the run does not exist. */
  check(client: Client, runId: string, action: AccessAction): Promise<void>;
  /** How to list only the runs this identity may read. */
  readScope(): ListScope | undefined;
  /**
   * Before sending a turn to session `sessionId` of `agent` (`steer`) or reading it (`read`): whom the
   * session must belong to for the send to be taken (SendOptions.ifBelongsTo): its own
   * principal when it exists and this identity may act on it, this identity's when it does not
   * exist yet (the send starts it); NOT_FOUND, as for a session that does not exist, when it
   * may not. Undefined without `auth:`.
   */
  session(client: Client, agent: string, sessionId: string, action: AccessAction): Promise<Principal | undefined>;
}

/** What a run that cannot be found, or may not be seen, answers. */
export function noSuchRun(runId: string): KeelError {
  return new KeelError('NOT_FOUND', `no run "${runId}" exists`);
}

/** What a session that cannot be found, or may not be seen, answers (the words a missing session gets everywhere). */
export function noSuchSession(agent: string, sessionId: string): KeelError {
  return new KeelError('NOT_FOUND', `session "${sessionId}" of agent "${agent}" does not exist`);
}

/** Whether `rule` lets `identity` act on a run of `principal`. */
function admits(rule: string, identity: Identity, principal: Principal): boolean {
  if (rule === '*') return true;
  if (rule === 'owner') return principal.owner !== undefined && principal.owner === identity.subject;
  const sameTenant = principal.tenant !== undefined && principal.tenant === identity.tenant;
  if (rule === 'tenant') return sameTenant;
  if (rule.startsWith('tenant:')) return sameTenant && identity.groups.includes(rule.slice('tenant:'.length));
  if (rule.startsWith('group:')) return identity.groups.includes(rule.slice('group:'.length));
  if (rule.startsWith('user:')) return identity.subject === rule.slice('user:'.length);
  return false;
}

/** The read rules as a visibility clause for `identity`: undefined when one lets it read every run, false when none lets it read any. */
function readClause(rules: readonly string[], identity: Identity): string | false | undefined {
  const disjuncts = new Set<string>();
  for (const rule of rules) {
    // A rule that does not depend on the run lets this identity read every run, or none.
    if (rule === '*' || rule.startsWith('group:') || rule.startsWith('user:')) {
      if (admits(rule, identity, {})) return undefined;
    } else if (rule === 'owner') disjuncts.add(`${KEEL_OWNER.name} = ${queryString(identity.subject)}`);
    else if (identity.tenant !== undefined && (rule === 'tenant' || identity.groups.includes(rule.slice('tenant:'.length))))
      disjuncts.add(`${KEEL_TENANT.name} = ${queryString(identity.tenant)}`);
  }
  return disjuncts.size ? [...disjuncts].join(' OR ') : false;
}

/** The one local user's access: everything, asking Temporal nothing (no `auth:`). */
export const OPEN_ACCESS: Access = {
  principal: {},
  may: () => true,
  check: async () => undefined,
  readScope: () => undefined,
  session: async () => undefined,
};

/** The principal of run `runId`, from its memo; NOT_FOUND when there is no such run. */
async function principalOf(client: Client, runId: string): Promise<Principal> {
  try {
    return principalOfMemo(
      await client.workflow
        .getHandle(runId)
        .describe()
        .then((description) => description.memo),
    );
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) throw noSuchRun(runId);
    throw error;
  }
}

/** The access `identity` has under `config` (absent identity: no `auth:`, everything allowed). */
export function accessOf(config: Pick<KeelConfig, 'auth' | 'access'>, identity: Identity | undefined): Access {
  if (!config.auth || !identity) return OPEN_ACCESS;
  const rules = config.access;
  const may = (action: AccessAction, principal: Principal) => rules[action].some((rule) => admits(rule, identity, principal));
  return {
    principal: { ...(identity.tenant ? { tenant: identity.tenant } : {}), owner: identity.subject },
    may,
    async check(client, runId, action) {
      if (!may(action, await principalOf(client, runId))) throw noSuchRun(runId);
    },
    readScope: () => ({ clause: readClause(rules.read, identity), admits: (memo) => may('read', principalOfMemo(memo)) }),
    async session(client, agent, sessionId, action) {
      let principal: Principal;
      try {
        principal = await principalOf(client, sessionWorkflowId(agent, sessionId));
      } catch (error) {
        if (KeelError.isInstance(error) && error.status === 'NOT_FOUND') return this.principal;
        throw error;
      }
      if (!may(action, principal)) throw noSuchSession(agent, sessionId);
      return principal;
    },
  };
}

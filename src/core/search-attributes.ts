/**
 * keel's search attributes: `KeelAgent` (the agent's name) and `KeelStatus` (running,
 * waiting, completed, failed, cancelled), kept current by each run so that
 * `temporal workflow list --query "KeelAgent='x' AND KeelStatus='waiting'"` finds the runs
 * waiting for a person, `KeelForkOf` (a fork's source run), and `KeelTenant` and `KeelOwner` (whom
 * a run belongs to). Pure: safe on both sides.
 */
import { defineSearchAttributeKey } from '@temporalio/common';

export const KEEL_AGENT = defineSearchAttributeKey('KeelAgent', 'KEYWORD');
export const KEEL_STATUS = defineSearchAttributeKey('KeelStatus', 'KEYWORD');
/** A fork's source run (docs/fork.md): `KeelForkOf='<runId>'` lists the forks of a run. */
export const KEEL_FORK_OF = defineSearchAttributeKey('KeelForkOf', 'KEYWORD');

/** Whom a run belongs to (docs/tenants.md): `KeelTenant='acme'` lists a tenant's runs, `KeelOwner='alice'` a person's. */
export const KEEL_TENANT = defineSearchAttributeKey('KeelTenant', 'KEYWORD');
export const KEEL_OWNER = defineSearchAttributeKey('KeelOwner', 'KEYWORD');

/** Names of keel's search attributes (all of type Keyword). */
export const KEEL_SEARCH_ATTRIBUTES = [KEEL_AGENT.name, KEEL_STATUS.name, KEEL_FORK_OF.name, KEEL_TENANT.name, KEEL_OWNER.name] as const;

/** The command that registers them on a cluster. */
export function registerCommand(namespace: string): string {
  return `temporal operator search-attribute create --namespace ${namespace} ${KEEL_SEARCH_ATTRIBUTES.map((name) => `--name ${name} --type Keyword`).join(' ')}`;
}

/** `value` as a string literal of a visibility query: quoted, its backslashes and quotes escaped (a run id or agent name can hold either). */
export function queryString(value: string): string {
  return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

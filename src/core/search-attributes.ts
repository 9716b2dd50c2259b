/**
 * keel's search attributes: `KeelAgent` (the agent's name) and `KeelStatus` (running,
 * waiting, completed, failed, cancelled), kept current by each run so that
 * `temporal workflow list --query "KeelAgent='x' AND KeelStatus='waiting'"` finds the runs
 * waiting for a person. Pure: safe on both sides.
 */
import { defineSearchAttributeKey } from '@temporalio/common';

export const KEEL_AGENT = defineSearchAttributeKey('KeelAgent', 'KEYWORD');
export const KEEL_STATUS = defineSearchAttributeKey('KeelStatus', 'KEYWORD');

/** Names of keel's search attributes (all of type Keyword). */
export const KEEL_SEARCH_ATTRIBUTES = [KEEL_AGENT.name, KEEL_STATUS.name] as const;

/** The command that registers them on a cluster. */
export function registerCommand(namespace: string): string {
  return `temporal operator search-attribute create --namespace ${namespace} ${KEEL_SEARCH_ATTRIBUTES.map((name) => `--name ${name} --type Keyword`).join(' ')}`;
}

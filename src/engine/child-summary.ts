/**
 * What a child run (a sub-agent, a background task, a session's run) shows in the Temporal Web
 * UI as its summary: `<agent>: <task>`, as a root run started by keel's client does. Runs in
 * the workflow.
 */
import { promptExcerpt, type Message } from '../core/messages';

/** The start options that give a child run of `agent` on `messages` its summary. */
export function childSummary(agent: string, messages: readonly Message[]): { staticSummary: string } {
  return { staticSummary: `${agent}: ${promptExcerpt(messages)}` };
}

/**
 * The commands that decide a pending hold, as `keel run`, `keel holds` and `keel tasks` print
 * them. Pure strings: no Temporal client is loaded for them.
 */

/**
 * The commands that decide hold `id` of run `runId`: approve and deny when its decision takes
 * `{ approved }` (`approvable`, true when not known), and always `decide` with a JSON value
 * matching its decision schema (`keel status` shows the schema).
 */
export function decideCommands(runId: string, id: string, approvable = true): { approve?: string; deny?: string; decide: string } {
  const decide = `npx keel decide ${runId} ${id} '<json>'`;
  if (!approvable) return { decide };
  return { approve: `npx keel approve ${runId} ${id}`, deny: `npx keel deny ${runId} ${id} --reason "..."`, decide };
}

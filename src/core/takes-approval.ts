/**
 * Whether a hold's decision schema takes approve and deny. Imports nothing, so keel ui's page
 * uses the same check as the CLI and the client. Pure: safe in workflow code.
 */

/**
 * True when a decision JSON Schema takes `{ approved: boolean }` (itself or one of its
 * alternatives): such a hold can be decided with approve and deny. Any other is decided with
 * a restart whose value matches the schema.
 */
export function takesApproval(schema: Record<string, unknown> | undefined): boolean {
  if (!schema) return true;
  const alternatives = [schema, ...((schema.anyOf ?? schema.oneOf ?? []) as Array<Record<string, unknown>>)];
  return alternatives.some((alternative) => {
    if (alternative.type !== 'object') return false;
    const properties = alternative.properties as Record<string, { type?: unknown }> | undefined;
    // A free-form object takes `{ approved }` as it takes anything.
    return properties === undefined ? alternative.additionalProperties !== false : properties.approved?.type === 'boolean';
  });
}

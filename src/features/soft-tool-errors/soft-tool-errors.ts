/**
 * SoftToolErrors (reference: genkit-middleware/softToolErrors): a covered tool failure
 * (the tool's own error, input that fails its schema, a call to an unknown tool) answers
 * the call as `{ "error": "<message>" }` and the run goes on, so the model can correct
 * itself. It only declares which tools it covers (the `coversToolError` hook); the loop
 * consults that policy after the whole wrapTool chain, for the tool's own failures only,
 * so errors a hook raises, holds and cancellation are never covered and other hooks see
 * the raw error first. Runs in the workflow.
 */
import { z } from 'zod';
import { defineMiddleware } from '../../middleware/define-middleware';

/** SoftToolErrors' config. */
export const SoftToolErrorsConfigSchema = z
  .object({
    /** Tool names covered; empty covers every tool and every unknown tool name. */
    tools: z.array(z.string()).default([]),
  })
  .strict();
export type SoftToolErrorsConfig = z.input<typeof SoftToolErrorsConfigSchema>;

/** SoftToolErrors: `use: [softToolErrors()]` or `softToolErrors({ tools: ['search'] })`. */
export const softToolErrors = defineMiddleware({
  name: 'softToolErrors',
  description: 'Returns tool errors to the model instead of failing the run.',
  configSchema: SoftToolErrorsConfigSchema,
  create(config) {
    return { coversToolError: (toolName) => config.tools.length === 0 || config.tools.includes(toolName) };
  },
});

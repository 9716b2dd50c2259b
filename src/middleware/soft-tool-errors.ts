/**
 * SoftToolErrors (reference: genkit-middleware/softToolErrors): a covered tool failure
 * (the tool's own error, input that fails its schema, a call to an unknown tool) answers
 * the call as `{ "error": "<message>" }` and the run goes on, so the model can correct
 * itself. Errors a wrapTool hook raises in place of the tool's, interrupts and
 * cancellation are never covered. The loop applies the policy after the whole wrapTool
 * chain, so other hooks see the raw error first. Runs in the workflow.
 */
import { isCancellation } from '@temporalio/workflow';
import { z } from 'zod';
import { KeelError } from '../core/errors';
import type { MiddlewareRef } from '../core/run';
import { middlewareRef } from './middleware-ref';
import type { MiddlewareDefinition, MiddlewareHooks } from './types';

/** SoftToolErrors' config. */
export const SoftToolErrorsConfigSchema = z
  .object({
    /** Tool names covered; empty covers every tool and every unknown tool name. */
    tools: z.array(z.string()).default([]),
  })
  .strict();
export type SoftToolErrorsConfig = z.input<typeof SoftToolErrorsConfigSchema>;

/** The softToolErrors middleware's hooks. */
export const softToolErrorsMiddleware: MiddlewareDefinition<typeof SoftToolErrorsConfigSchema> = {
  name: 'softToolErrors',
  description: 'Returns tool errors to the model instead of failing the run.',
  configSchema: SoftToolErrorsConfigSchema,
  create(config) {
    return { coversToolError: (toolName) => config.tools.length === 0 || config.tools.includes(toolName) };
  },
};

/**
 * The message a failed tool call shows the model when some middleware covers it, else
 * undefined. Only the tool's own failures qualify (marked `toolOwn` by the loop's innermost
 * tool stage): not errors a hook raised in their place, not cancellation.
 */
export function softToolErrorMessage(error: unknown, toolName: string, hooks: readonly MiddlewareHooks[]): string | undefined {
  if (isCancellation(error) || !KeelError.isInstance(error) || error.details.toolOwn !== true) return undefined;
  if (!hooks.some((hook) => hook.coversToolError?.(toolName))) return undefined;
  return typeof error.details.toolMessage === 'string' ? error.details.toolMessage : error.message;
}

/** `use: [softToolErrors()]` or `softToolErrors({ tools: ['search'] })` */
export function softToolErrors(config: SoftToolErrorsConfig = {}): MiddlewareRef {
  return middlewareRef(softToolErrorsMiddleware, config);
}

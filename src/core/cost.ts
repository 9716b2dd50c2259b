/**
 * What a model call costs in USD, from the model's price per million tokens and the usage it
 * reported. Computed in the model activity (so the cost is recorded in history with the usage);
 * pure, safe on both sides.
 */
import { z } from 'zod';
import type { Usage } from './usage';

const PerMTok = z.number().min(0, 'must not be negative');

/** A model's price in USD per million tokens. Cached input defaults to the input price. */
export const ModelPriceSchema = z
  .object({
    /** USD per million input tokens not read from a cache. */
    inputPerMTok: PerMTok,
    /** USD per million output tokens (reasoning tokens included). */
    outputPerMTok: PerMTok,
    /** USD per million input tokens read from the provider's cache (`cachedContentTokens`); default: `inputPerMTok`. */
    cachedInputPerMTok: PerMTok.optional(),
  })
  .strict();
export type ModelPrice = z.infer<typeof ModelPriceSchema>;

/**
 * The cost of one call: `inputTokens` (cached ones included, as providers count them) less
 * `cachedContentTokens` at the input price, the cached ones at the cached price, and
 * `outputTokens` plus `thoughtsTokens` at the output price. Rounded to 1e-9 USD so sums stay tidy.
 */
export function costOf(usage: Usage, price: ModelPrice): number {
  const cached = Math.max(0, usage.cachedContentTokens ?? 0);
  const input = Math.max(0, (usage.inputTokens ?? 0) - cached);
  const output = (usage.outputTokens ?? 0) + (usage.thoughtsTokens ?? 0);
  const usd = (input * price.inputPerMTok + cached * (price.cachedInputPerMTok ?? price.inputPerMTok) + output * price.outputPerMTok) / 1_000_000;
  return Math.round(usd * 1e9) / 1e9;
}

/** The usage with its `cost` filled in from the price (a cost the model reported itself is kept). */
export function pricedUsage(usage: Usage, price: ModelPrice | undefined): Usage {
  if (!price || usage.cost !== undefined) return usage;
  return { ...usage, cost: costOf(usage, price) };
}

/**
 * The example of docs/structured-output.md, type-checked with the project and run by
 * test/structured-output.test.ts: an agent whose answer is a zod schema, a scripted model that
 * answers it (first wrongly, so the retry shows), and a client whose `result.output` is typed.
 * Load it from temporal.yaml (`modules: [examples/structured-output.ts]`) to run it offline.
 */
import { z } from 'zod';
import { defineAgent, KeelClient } from 'keel-agents';
import { objectReply, scriptedModel } from 'keel-agents/testing';

export const Forecast = z.object({
  city: z.string(),
  celsius: z.number(),
  summary: z.string().max(80),
});

/** Answers the forecast with a string for celsius first: keel sends it back with the validation error. */
export const forecastModel = scriptedModel({
  name: 'scripted/forecaster',
  script: [objectReply({ city: 'Oslo', celsius: 'cold', summary: 'Grey' }), objectReply({ city: 'Oslo', celsius: 4, summary: 'Grey, light rain' })],
});

export const forecaster = defineAgent({
  name: 'forecaster',
  model: forecastModel.name,
  system: 'Give the forecast for the city asked about.',
  output: { schema: Forecast, retries: 2 },
});

/** Runs the agent; `output` is `{ city: string; celsius: number; summary: string } | undefined`. */
export async function forecast(client: KeelClient, city: string): Promise<z.output<typeof Forecast> | undefined> {
  const result = await client.run(forecaster, `What is the weather in ${city}?`);
  return result.output;
}

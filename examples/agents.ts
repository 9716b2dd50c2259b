/**
 * Agents and tools of the demo and the README tour. With OPENAI_BASE_URL or OPENAI_API_KEY
 * set, the demo agent talks to that OpenAI-compatible endpoint (model $OPENAI_MODEL,
 * default gpt-4o-mini); otherwise it uses a scripted model, so it runs with no API key.
 */
import { mkdirSync } from 'node:fs';
import { appendFile, mkdir } from 'node:fs/promises';
import { dirname, relative, resolve } from 'node:path';
import { z } from 'zod';
import { defineAgent, defineTool, openAICompatibleModel, type ModelRequest } from 'keel-agents';
import { agents, filesystem, skills, toolApproval } from 'keel-agents/middleware';
import { scriptedModel, textReply, toolCallReply } from 'keel-agents/testing';

const FORECASTS: Record<string, { sky: string; highC: number }> = {
  lisbon: { sky: 'sunny', highC: 24 },
  porto: { sky: 'light rain', highC: 18 },
  madrid: { sky: 'clear', highC: 27 },
};

/** A small fixed forecast table: the point of the demo is the run, not the weather. */
export const lookupWeather = defineTool({
  name: 'lookup_weather',
  description: "Looks up tomorrow's forecast for a city.",
  input: z.object({ city: z.string().describe('City name, e.g. Lisbon') }),
  output: z.object({ city: z.string(), sky: z.string(), highC: z.number() }),
  async run({ city }) {
    const forecast = FORECASTS[city.toLowerCase()];
    if (!forecast) throw new Error(`no forecast for "${city}"; known cities: Lisbon, Porto, Madrid`);
    return { city, ...forecast };
  },
});

const RATES: Record<string, number> = { EUR: 1, USD: 1.08, GBP: 0.86 };

/** Converts between a few currencies at fixed rates. */
export const convertCurrency = defineTool({
  name: 'convert_currency',
  description: 'Converts an amount between EUR, USD and GBP.',
  input: z.object({ amount: z.number().positive(), from: z.enum(['EUR', 'USD', 'GBP']), to: z.enum(['EUR', 'USD', 'GBP']) }),
  output: z.object({ amount: z.number(), currency: z.string() }),
  async run({ amount, from, to }) {
    return { amount: Math.round((amount / RATES[from]!) * RATES[to]! * 100) / 100, currency: to };
  },
});

/** Books a train ticket (pretend): a side effect the demo agent needs approval for. */
export const bookTrain = defineTool({
  name: 'book_train',
  description: 'Books a train ticket for tomorrow.',
  input: z.object({ from: z.string(), to: z.string() }),
  output: z.object({ booking: z.string() }),
  async run({ from, to }, { idempotencyKey }) {
    return { booking: `${from.slice(0, 3).toUpperCase()}-${to.slice(0, 3).toUpperCase()}-${idempotencyKey.length}` };
  },
});

/** Appends a line to a file under .keel/demo (a side effect you can count). */
export const appendLine = defineTool({
  name: 'append_line',
  description: 'Appends a line to a file.',
  input: z.object({ path: z.string(), line: z.string() }),
  output: z.object({ ok: z.boolean() }),
  async run({ path, line }) {
    const file = resolve('.keel', 'demo', path.replace(/^\/+/, '').replace(/\.\./g, '_'));
    await mkdir(dirname(file), { recursive: true });
    await appendFile(file, `${line}\n`);
    return { ok: true };
  },
});

/** Works for a while, heartbeating: kill the worker that runs it and watch another take over. */
export const slowStep = defineTool({
  name: 'slow_step',
  description: 'Does some slow work.',
  input: z.object({ seconds: z.number().min(0).max(600) }),
  output: z.object({ sleptSeconds: z.number(), attempt: z.number() }),
  async run({ seconds }, { signal, attempt }) {
    await new Promise<void>((done, fail) => {
      const timer = setTimeout(done, seconds * 1000);
      signal.addEventListener('abort', () => {
        clearTimeout(timer);
        fail(new Error('cancelled'));
      });
    });
    return { sleptSeconds: seconds, attempt };
  },
});

const useRealModel = Boolean(process.env.OPENAI_BASE_URL || process.env.OPENAI_API_KEY);
/**
 * A model declared elsewhere for the demo's agents, by its registered name: a `models:` entry
 * of temporal.yaml, e.g. any AI SDK provider's (`KEEL_DEMO_MODEL=ollama/llama3.1 npm start`).
 */
const configuredModel = process.env.KEEL_DEMO_MODEL || undefined;

/**
 * The demo's skills (a sample skill ships with the repository), relative to the worker's working
 * directory: the model is shown a skill's directory as its skill path names it, and a relative one
 * keeps the checkout's absolute path out of the conversation (`examples/skills/trip-writer`).
 */
export const SKILLS_DIR = relative(process.cwd(), resolve(__dirname, 'skills')) || '.';
/** Where the demo writes its itinerary (created when a worker loads this module). */
export const TRIPS_DIR = resolve(__dirname, '..', '.keel', 'trips');
mkdirSync(TRIPS_DIR, { recursive: true });

/** The task id a background delegation answered with, found in the conversation. */
function launchedTask(request: ModelRequest): string | undefined {
  for (const message of request.messages) {
    for (const part of message.content) {
      if ('toolResponse' in part && part.toolResponse.name === 'delegate_to_fare-scout') return (part.toolResponse.output as { taskId?: string }).taskId;
    }
  }
  return undefined;
}

/** What the fare scout answered, once collected with wait_for_background_tasks. */
function collectedFare(request: ModelRequest): string {
  for (const message of request.messages) {
    for (const part of message.content) {
      if ('toolResponse' in part && part.toolResponse.name === 'wait_for_background_tasks') {
        return (part.toolResponse.output as { tasks?: Array<{ response?: string }> }).tasks?.[0]?.response ?? 'no fare found';
      }
    }
  }
  return 'no fare found';
}

/** The demo's model: a real endpoint when configured, else a scripted one. */
export const demoModel = useRealModel
  ? openAICompatibleModel({ name: `openai/${process.env.OPENAI_MODEL ?? 'gpt-4o-mini'}` })
  : scriptedModel({
      name: 'scripted/trip-planner',
      script: [
        // turn 1: the weather in both cities, the fare handed to a sub-agent in the background, the house style loaded
        toolCallReply(
          [
            { name: 'lookup_weather', input: { city: 'Lisbon' } },
            { name: 'lookup_weather', input: { city: 'Porto' } },
            { name: 'delegate_to_fare-scout', input: { task: 'What does a 25 EUR train ticket cost in USD?', background: true, name: 'fare' } },
            { name: 'use_skill', input: { skillName: 'trip-writer' } },
          ],
          { usage: { inputTokens: 120, outputTokens: 30 } },
        ),
        // turn 2: collect the fare
        (request: ModelRequest) =>
          toolCallReply({ name: 'wait_for_background_tasks', input: { taskIds: [launchedTask(request)] } }, { usage: { inputTokens: 210, outputTokens: 20 } }),
        toolCallReply({ name: 'book_train', input: { from: 'Porto', to: 'Lisbon' } }, { usage: { inputTokens: 240, outputTokens: 15 } }),
        // turn 4: the itinerary, as the trip-writer skill asks
        (request: ModelRequest) =>
          toolCallReply(
            {
              name: 'write_file',
              input: {
                filePath: `itinerary-${(launchedTask(request) ?? 'trip').split(':run-')[1]?.slice(0, 8) ?? 'trip'}.md`,
                content: `# Lisbon tomorrow\n\n1. Go to Lisbon: sunny and 24°C (Porto: light rain, 18°C).\n2. Train Porto → Lisbon: ${collectedFare(request)}\n3. On arrival: a pastel de nata in Belém.\n`,
              },
            },
            { usage: { inputTokens: 260, outputTokens: 40 } },
          ),
        (request: ModelRequest) => {
          const booked = request.messages
            .flatMap((message) => message.content)
            .find((part) => 'toolResponse' in part && part.toolResponse.name === 'book_train');
          const output = booked && 'toolResponse' in booked ? (booked.toolResponse.output as { booking?: string; error?: string }) : {};
          const booking = output.booking ? `Your ticket is booked (${output.booking}).` : 'I did not book the ticket, as you asked.';
          return textReply(`Go to Lisbon: sunny and 24°C, while Porto expects light rain at 18°C. ${collectedFare(request)} ${booking}`, {
            usage: { inputTokens: 300, outputTokens: 45 },
          });
        },
      ],
    });

/** The fare scout's scripted model (with a real endpoint, the scout uses the demo's model). */
export const fareScoutModel = useRealModel
  ? undefined
  : scriptedModel({
      name: 'scripted/fare-scout',
      script: [
        toolCallReply({ name: 'convert_currency', input: { amount: 25, from: 'EUR', to: 'USD' } }, { usage: { inputTokens: 60, outputTokens: 10 } }),
        textReply('The 25 EUR train ticket comes to about 27 USD.', { usage: { inputTokens: 80, outputTokens: 12 } }),
      ],
    });

/** A sub-agent the demo delegates to in the background: it looks up prices. */
export const fareScout = defineAgent({
  name: 'fare-scout',
  description: 'Finds train fares and converts prices between currencies.',
  model: configuredModel ?? fareScoutModel?.name ?? demoModel.name,
  system: 'You find train fares and convert prices. Answer in one sentence.',
  tools: [convertCurrency],
});

/** The demo agent. */
export const tripPlanner = defineAgent({
  name: 'trip-planner',
  description: 'Plans a day trip from forecasts and prices.',
  model: configuredModel ?? demoModel.name,
  system:
    'You plan day trips in Portugal and Spain. Check the weather, have the fare scout price the train in the background, book the train, write the itinerary, then answer in two sentences.',
  tools: [lookupWeather, bookTrain],
  use: [
    // Sub-agents, one of them working in the background while the planner goes on.
    agents({ agents: ['fare-scout'], async: true }),
    // The house style for itineraries, as a skill the model loads when it needs it.
    skills({ skillPaths: [SKILLS_DIR] }),
    // A folder of its own for the itinerary.
    filesystem({ rootDirectory: TRIPS_DIR, allowWriteAccess: true }),
    // Looking things up, delegating and writing the itinerary are fine; booking needs a person's approval.
    toolApproval({
      allowedTools: [
        'lookup_weather',
        'delegate_to_fare-scout',
        'wait_for_background_tasks',
        'check_background_tasks',
        'abort_background_tasks',
        'use_skill',
        'list_files',
        'read_file',
        'write_file',
        'edit_file',
      ],
    }),
  ],
});

/** The README tour's agent: one slow step, then a line written to a file. */
export const tourModel = scriptedModel({
  name: 'scripted/tour',
  script: [
    toolCallReply({ name: 'slow_step', input: { seconds: 15 } }),
    toolCallReply({ name: 'append_line', input: { path: 'tour.txt', line: 'slow step done' } }),
    textReply('Finished: the slow step ran and tour.txt has one more line.'),
  ],
});

/** Used in the README tour to watch a run survive a killed worker. */
export const tour = defineAgent({
  name: 'tour',
  description: 'A slow run for the crash tour.',
  model: tourModel.name,
  tools: [slowStep, appendLine],
});

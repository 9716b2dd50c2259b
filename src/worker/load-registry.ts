/**
 * Builds a worker's registry from the config: every tool, agent and model the configured
 * modules export, plus the models and agents declared in temporal.yaml. Checks that every
 * agent's model and tools exist, naming the config field when one does not. Node side.
 */
import { join, resolve } from 'node:path';
import { inspect } from 'node:util';
import { ConfigError } from '../config/load';
import { describeZodError } from '../core/schema-errors';
import { outputSpecOf } from '../core/output';
import { registerExportedMiddleware, registeredMiddleware, registeredNames } from '../features/catalog';
import type { AiSdkModelConfig, KeelConfig, ModelConfig } from '../config/schema';
import { aiSdkModel, type AiSdkLanguageModel } from '../models/ai-sdk';
import { defineAgent, type Model } from '../define';
import { anthropicModel } from '../models/anthropic';
import { openAICompatibleModel } from '../models/openai-compatible';
import { scriptedModel } from '../models/scripted';
import { Registry } from '../registry';
import { connectMcpServers } from '../tools/mcp';
import { requireModule } from '../node/require-ts';

/** What a module threw at import, as text: an Error's message, else the value itself (`throw "x"`, `throw { code: 1 }`). */
export function thrownMessage(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (typeof error === 'object' && error !== null && typeof (error as { message?: unknown }).message === 'string')
    return (error as { message: string }).message;
  return `it threw ${inspect(error, { depth: 3, breakLength: Infinity })} (not an Error)`;
}

/** Loads a .ts or .js module through tsx's CommonJS hook, so config modules may be TypeScript. */
function loadModule(file: string): Record<string, unknown> {
  return requireModule(file, __filename);
}

/** A model from its config entry; an HTTP provider's key comes from `apiKey` or the variable `apiKeyEnv` names. */
export function modelFromConfig(entry: ModelConfig, baseDir = process.cwd()): Model {
  const { price, rateLimit, local } = entry;
  const model = providerModel(entry, baseDir);
  // The model was made here, for this entry: its price, limit and call mode are set on it (a scripted model keeps its getters).
  return Object.assign(model, { ...(price ? { price } : {}), ...(rateLimit ? { rateLimit } : {}), ...(local !== undefined ? { local } : {}) });
}

function providerModel(entry: ModelConfig, baseDir: string): Model {
  // A worker runs for weeks: a scripted model declared in the config keeps none of the requests it was sent (code that wants them builds its own).
  if (entry.provider === 'scripted') return scriptedModel({ name: entry.name, script: entry.script, keepRequests: 0 });
  if (entry.provider === 'ai-sdk') return aiSdkModelFromConfig(entry, baseDir);
  const { provider, apiKeyEnv, apiKey, price: _price, rateLimit: _rateLimit, local: _local, ...options } = entry;
  const key = apiKey ?? (apiKeyEnv ? process.env[apiKeyEnv] : undefined);
  return provider === 'anthropic' ? anthropicModel({ ...options, apiKey: key }) : openAICompatibleModel({ ...options, apiKey: key });
}

/** A provider, as AI SDK packages make them: callable with a model id, or with a `languageModel` method. */
type AiSdkProvider = ((modelId: string) => AiSdkLanguageModel) & { languageModel?: (modelId: string) => AiSdkLanguageModel };

/** An AI SDK provider package's model, loaded from the project's own node_modules. */
function aiSdkModelFromConfig(entry: AiSdkModelConfig, baseDir: string): Model {
  let exports: Record<string, unknown>;
  try {
    exports = requireModule(entry.package, join(baseDir, 'temporal.yaml'));
  } catch (error) {
    throw new Error(
      `package: cannot load "${entry.package}" from ${baseDir} (install it there: npm install ${entry.package}): ${(error as Error).message.split('\n')[0]}`,
    );
  }
  const exported = (field: 'factory' | 'instance', exportName: string): unknown => {
    const value = exports[exportName];
    if (value === undefined)
      throw new Error(`${field}: "${entry.package}" has no export "${exportName}"; its exports: ${Object.keys(exports).sort().join(', ')}`);
    if (typeof value !== 'function') throw new Error(`${field}: "${entry.package}".${exportName} is not a function`);
    return value;
  };
  const options = { ...entry.options };
  for (const [option, variable] of Object.entries(entry.optionsFromEnv)) {
    const value = process.env[variable];
    if (value !== undefined) options[option] = value;
  }
  const provider = (
    entry.factory ? (exported('factory', entry.factory) as (options: Record<string, unknown>) => AiSdkProvider)(options) : exported('instance', entry.instance!)
  ) as AiSdkProvider;
  const modelId = entry.model ?? entry.name.slice(entry.name.indexOf('/') + 1);
  const model = typeof provider.languageModel === 'function' ? provider.languageModel(modelId) : provider(modelId);
  return aiSdkModel({
    name: entry.name,
    model,
    ...(entry.config ? { config: entry.config } : {}),
    ...(entry.stream !== undefined ? { stream: entry.stream } : {}),
  });
}

type RegistryConfig = Pick<KeelConfig, 'modules' | 'models' | 'agents' | 'baseDir'> & Partial<Pick<KeelConfig, 'middlewareModules' | 'mcpServers'>>;

/**
 * Loads the config's modules, MCP servers and declarative entries into a registry. When it
 * fails, what it opened (MCP connections) is closed again; otherwise `registry.close()` does
 * that once the worker has stopped.
 */
export async function loadRegistry(config: RegistryConfig, registry = new Registry()): Promise<Registry> {
  try {
    return await fillRegistry(config, registry);
  } catch (error) {
    await registry.close();
    throw error;
  }
}

async function fillRegistry(config: RegistryConfig, registry: Registry): Promise<Registry> {
  // Middleware modules are bundled with the workflow; registering their factories here too lets configs be checked now.
  for (const [index, modulePath] of (config.middlewareModules ?? []).entries()) {
    const file = resolve(config.baseDir, modulePath);
    try {
      registerExportedMiddleware(loadModule(file));
    } catch (error) {
      throw new ConfigError(`middlewareModules[${index}]: cannot load ${file}: ${thrownMessage(error)}`);
    }
  }
  for (const [index, modulePath] of config.modules.entries()) {
    const file = resolve(config.baseDir, modulePath);
    let exports: Record<string, unknown>;
    try {
      exports = loadModule(file);
    } catch (error) {
      throw new ConfigError(`modules[${index}]: cannot load ${file}: ${thrownMessage(error)}`);
    }
    try {
      registry.addModuleExports(exports);
    } catch (error) {
      throw new ConfigError(`modules[${index}] (${modulePath}): ${thrownMessage(error)}`);
    }
  }
  const servers = config.mcpServers ?? [];
  if (servers.length) {
    let connected: Awaited<ReturnType<typeof connectMcpServers>>;
    try {
      connected = await connectMcpServers(servers, config.baseDir);
    } catch (error) {
      const index = (error as { serverIndex?: number }).serverIndex ?? 0;
      throw new ConfigError(`mcpServers[${index}] (${servers[index]?.name}): ${(error as Error).message}`);
    }
    registry.onClose(connected.close);
    for (const [index, tools] of connected.tools.entries()) {
      try {
        registry.add(...tools);
      } catch (error) {
        throw new ConfigError(`mcpServers[${index}] (${servers[index]!.name}): ${(error as Error).message}; set toolPrefix to tell them apart`);
      }
    }
  }
  for (const [index, entry] of config.models.entries()) {
    try {
      registry.add(modelFromConfig(entry, config.baseDir));
    } catch (error) {
      throw new ConfigError(`models[${index}]: ${(error as Error).message}`);
    }
  }
  for (const [index, entry] of config.agents.entries()) {
    for (const [useIndex, ref] of entry.use.entries()) {
      const definition = registeredMiddleware()[ref.name];
      if (!definition) {
        throw new ConfigError(`agents[${index}].use[${useIndex}].name: unknown middleware "${ref.name}"; known: ${registeredNames().join(', ')}`);
      }
      const parsed = definition.configSchema.safeParse(ref.config);
      if (!parsed.success) throw new ConfigError(`agents[${index}].use[${useIndex}] (${ref.name}): ${describeZodError(parsed.error, 'config')}`);
    }
    for (const [toolIndex, tool] of entry.tools.entries()) {
      if (!registry.tools.has(tool)) {
        throw new ConfigError(
          `agents[${index}].tools[${toolIndex}]: tool "${tool}" is not registered; registered tools: ${[...registry.tools.keys()].sort().join(', ') || '(none)'}`,
        );
      }
    }
    try {
      registry.add(defineAgent({ ...entry, output: entry.output === undefined ? undefined : outputSpecOf(entry.output) }));
    } catch (error) {
      throw new ConfigError(`agents[${index}]: ${(error as Error).message}`);
    }
  }
  for (const [index, entry] of config.agents.entries()) {
    if (!registry.models.has(entry.model)) {
      throw new ConfigError(
        `agents[${index}].model: model "${entry.model}" is not registered; registered models: ${[...registry.models.keys()].sort().join(', ') || '(none)'}`,
      );
    }
  }
  return registry;
}

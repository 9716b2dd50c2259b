/**
 * Reads temporal.yaml, applies environment overrides, validates with zod. A bad file fails
 * with ConfigError naming the field's path and what was expected (the CLI exits 2).
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parse as parseYaml, YAMLParseError } from 'yaml';
import { describeZodError } from '../core/schema-errors';
import { KeelConfigSchema, type KeelConfig, type KeelConfigInput } from './schema';

/** A config that cannot be used; `message` names the file, the field and the problem. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/** Environment variables that override connection and server fields. */
export const CONFIG_ENV = {
  TEMPORAL_ADDRESS: 'temporal.address',
  TEMPORAL_NAMESPACE: 'temporal.namespace',
  TEMPORAL_API_KEY: 'temporal.apiKey',
  TEMPORAL_TLS: 'temporal.tls',
  KEEL_TASK_QUEUE: 'taskQueue',
  TEMPORAL_CLI: 'server.binary',
  KEEL_DEPLOYMENT_NAME: 'deployment.name',
  KEEL_BUILD_ID: 'deployment.buildId',
} as const;

function applyEnv(raw: Record<string, unknown>, env: NodeJS.ProcessEnv): Record<string, unknown> {
  const out: Record<string, unknown> = structuredClone(raw);
  for (const [variable, path] of Object.entries(CONFIG_ENV)) {
    const value = env[variable];
    if (value === undefined || value === '') continue;
    const [section, field] = path.split('.') as [string, string | undefined];
    const parsed: unknown = variable === 'TEMPORAL_TLS' ? value === 'true' || value === '1' : value;
    if (!field) {
      out[section] = parsed;
      continue;
    }
    const current = out[section];
    out[section] = { ...(typeof current === 'object' && current !== null ? current : {}), [field]: parsed };
  }
  return out;
}

/** Validates an already-parsed config object (from a file or from code). */
export function parseConfig(
  raw: unknown,
  { source = 'config', baseDir = process.cwd(), env = process.env }: { source?: string; baseDir?: string; env?: NodeJS.ProcessEnv } = {},
): KeelConfig {
  if (raw === null || raw === undefined) raw = {};
  if (typeof raw !== 'object' || Array.isArray(raw)) throw new ConfigError(`${source}: expected a mapping at the top level`);
  const parsed = KeelConfigSchema.safeParse(applyEnv(raw as Record<string, unknown>, env));
  if (!parsed.success) throw new ConfigError(`${source}: invalid config: ${describeZodError(parsed.error)}`);
  const config = parsed.data;
  config.temporal.address ??= `${config.server.ip}:${config.server.port}`;
  return { ...config, baseDir };
}

/**
 * Loads a config file. A missing file at the default path means all defaults; a missing
 * file that was asked for explicitly is an error.
 */
export function loadConfig({ path, explicit = false, env = process.env }: { path?: string; explicit?: boolean; env?: NodeJS.ProcessEnv } = {}): KeelConfig {
  const file = resolve(path ?? 'temporal.yaml');
  if (!existsSync(file)) {
    if (explicit) throw new ConfigError(`${file}: config file not found`);
    return parseConfig({}, { source: file, baseDir: dirname(file), env });
  }
  let raw: unknown;
  try {
    raw = parseYaml(readFileSync(file, 'utf8'));
  } catch (error) {
    const where = error instanceof YAMLParseError && error.linePos ? ` (line ${error.linePos[0].line})` : '';
    throw new ConfigError(`${file}${where}: not valid YAML: ${(error as Error).message.split('\n')[0]}`);
  }
  const config = parseConfig(raw, { source: file, baseDir: dirname(file), env });
  return { ...config, path: file };
}

/** Builds a config in code (tests, embedding). */
export function defineConfig(input: KeelConfigInput, baseDir = process.cwd()): KeelConfig {
  return parseConfig(input, { baseDir, env: {} });
}

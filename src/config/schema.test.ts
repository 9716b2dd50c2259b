import { describe, expect, it } from 'vitest';
import { devServerArgs, devServerOptions } from '../server/dev-server';
import { parseConfig } from './load';
import { KeelConfigSchema } from './schema';

const RETRY_DEFAULTS = { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 10 };
const MODEL_DEFAULTS = { startToCloseTimeout: '5 minutes', heartbeatTimeout: '30 seconds', retry: RETRY_DEFAULTS };
const TOOL_DEFAULTS = { startToCloseTimeout: '10 minutes', heartbeatTimeout: '30 seconds', retry: RETRY_DEFAULTS };

describe('config activities', () => {
  it('has separate defaults for model and tool activities', () => {
    expect(parseConfig({}, { env: {} }).activities).toEqual({ model: MODEL_DEFAULTS, tool: TOOL_DEFAULTS });
  });

  it('keeps every other default of a kind when one field of it is set', () => {
    expect(parseConfig({ activities: { model: { startToCloseTimeout: '2 minutes' } } }, { env: {} }).activities).toEqual({
      model: { ...MODEL_DEFAULTS, startToCloseTimeout: '2 minutes' },
      tool: TOOL_DEFAULTS,
    });
    expect(parseConfig({ activities: { model: { heartbeatTimeout: '5 seconds' } } }, { env: {} }).activities).toEqual({
      model: { ...MODEL_DEFAULTS, heartbeatTimeout: '5 seconds' },
      tool: TOOL_DEFAULTS,
    });
    expect(parseConfig({ activities: { tool: { heartbeatTimeout: '2 seconds' } } }, { env: {} }).activities).toEqual({
      model: MODEL_DEFAULTS,
      tool: { ...TOOL_DEFAULTS, heartbeatTimeout: '2 seconds' },
    });
  });

  it('keeps the other retry defaults when one retry field is set', () => {
    expect(parseConfig({ activities: { model: { retry: { maximumAttempts: 3 } } } }, { env: {} }).activities).toEqual({
      model: { ...MODEL_DEFAULTS, retry: { ...RETRY_DEFAULTS, maximumAttempts: 3 } },
      tool: TOOL_DEFAULTS,
    });
  });
});

describe('config namespace', () => {
  it('has one namespace setting, temporal.namespace', () => {
    expect(() => KeelConfigSchema.parse({ server: { namespace: 'team-a' } })).toThrow(/namespace/);
    expect(parseConfig({ temporal: { namespace: 'team-a' } }, { env: {} }).temporal.namespace).toBe('team-a');
  });

  it('makes the embedded dev server create the namespace the client uses', () => {
    const args = devServerArgs(devServerOptions(parseConfig({ temporal: { namespace: 'team-a' } }, { env: {} })));
    expect(args[args.indexOf('--namespace') + 1]).toBe('team-a');
    expect(args.filter((arg) => arg === '--namespace')).toHaveLength(1);
  });

  it('lets TEMPORAL_NAMESPACE choose the namespace of client and dev server alike', () => {
    const config = parseConfig({ temporal: { namespace: 'team-a' } }, { env: { TEMPORAL_NAMESPACE: 'team-b' } });
    expect(config.temporal.namespace).toBe('team-b');
    const args = devServerArgs(devServerOptions(config));
    expect(args[args.indexOf('--namespace') + 1]).toBe('team-b');
  });

  it('builds the rest of the dev server arguments from the config', () => {
    const config = parseConfig(
      { server: { ip: '0.0.0.0', port: 9000, uiPort: 9001, dbFile: 'data/t.db', logLevel: 'error' } },
      { baseDir: '/srv/keel', env: {} },
    );
    expect(devServerArgs(devServerOptions(config))).toEqual([
      'server',
      'start-dev',
      '--ip',
      '0.0.0.0',
      '--port',
      '9000',
      '--namespace',
      'default',
      '--log-level',
      'error',
      '--ui-port',
      '9001',
      '--db-filename',
      '/srv/keel/data/t.db',
      // keel's search attributes; eager activity execution, one task queue partition and fairness, as every embedded server starts.
      '--search-attribute',
      'KeelAgent=Keyword',
      '--search-attribute',
      'KeelStatus=Keyword',
      '--search-attribute',
      'KeelForkOf=Keyword',
      '--search-attribute',
      'KeelTenant=Keyword',
      '--search-attribute',
      'KeelOwner=Keyword',
      '--dynamic-config-value',
      'system.enableActivityEagerExecution=true',
      '--dynamic-config-value',
      'matching.numTaskqueueReadPartitions=1',
      '--dynamic-config-value',
      'matching.numTaskqueueWritePartitions=1',
      '--dynamic-config-value',
      'matching.enableFairness=true',
    ]);
  });
});

describe('config models', () => {
  const error = (entry: Record<string, unknown>): string => {
    try {
      parseConfig({ models: [entry] }, { env: {} });
    } catch (failure) {
      return (failure as Error).message;
    }
    throw new Error('the entry was accepted');
  };

  it("names the wrong field of the entry's own provider, not the fields of every other provider", () => {
    expect(error({ name: 'a/b', provider: 'openai-compatible', baseUrl: 3 })).toBe(
      'config: invalid config: models[0].baseUrl: Invalid input: expected string, received number',
    );
    expect(error({ name: 'a/b', provider: 'anthropic', maxTokens: 'x' })).toBe(
      'config: invalid config: models[0].maxTokens: Invalid input: expected number, received string',
    );
    expect(error({ name: 'a/b', provider: 'ai-sdk', package: 'p', factory: 'f', stream: 'yes' })).toBe(
      'config: invalid config: models[0].stream: Invalid input: expected boolean, received string',
    );
    expect(error({ name: 'a/b', provider: 'gemini' })).toContain("models[0].provider: Invalid discriminator value. Expected 'scripted' | 'openai-compatible'");
    expect(error({ name: 'a/b', provider: 'openai-compatible', temperature: 0 })).toBe('config: invalid config: models[0]: Unrecognized key: "temperature"');
  });

  it('takes an entry without a provider as a scripted model', () => {
    expect(parseConfig({ models: [{ name: 'a/b', script: [] }] }, { env: {} }).models).toEqual([{ name: 'a/b', provider: 'scripted', script: [] }]);
    expect(error({ name: 'a/b' })).toBe('config: invalid config: models[0].script: Invalid input: expected array, received undefined');
  });
});

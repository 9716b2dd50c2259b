import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from './load';

describe('config', () => {
  it('fills every default from an empty file', () => {
    const config = parseConfig({}, { env: {} });
    expect(config.temporal).toMatchObject({ address: '127.0.0.1:7233', namespace: 'default', tls: false });
    expect(config.taskQueue).toBe('keel');
    expect(config.server).toMatchObject({ enabled: true, port: 7233, uiPort: 8233, dbFile: '.keel/temporal.db' });
    expect(config.activities.model.startToCloseTimeout).toBe('5 minutes');
    expect(config.activities.tool.retry.maximumAttempts).toBe(10);
    expect(config).toMatchObject({ modules: [], agents: [], models: [] });
  });

  it('derives the address from the dev server port', () => {
    expect(parseConfig({ server: { port: 9000 } }, { env: {} }).temporal.address).toBe('127.0.0.1:9000');
  });

  it('lets environment variables override connection fields', () => {
    const config = parseConfig(
      { temporal: { address: 'file:1' } },
      { env: { TEMPORAL_ADDRESS: 'env:2', TEMPORAL_NAMESPACE: 'ns', KEEL_TASK_QUEUE: 'q', TEMPORAL_TLS: 'true', TEMPORAL_API_KEY: 'k' } },
    );
    expect(config.temporal).toMatchObject({ address: 'env:2', namespace: 'ns', tls: true, apiKey: 'k' });
    expect(config.taskQueue).toBe('q');
  });

  it('takes the Worker Deployment from the file or from KEEL_DEPLOYMENT_NAME and KEEL_BUILD_ID, and names a missing half', () => {
    expect(parseConfig({}, { env: {} }).deployment).toBeUndefined();
    expect(parseConfig({}, { env: { KEEL_DEPLOYMENT_NAME: 'agents', KEEL_BUILD_ID: 'v2' } }).deployment).toEqual({
      name: 'agents',
      buildId: 'v2',
      defaultBehavior: 'pinned',
      agents: {},
    });
    const file = { deployment: { name: 'agents', buildId: 'v1', agents: { digest: 'autoUpgrade' } } };
    expect(parseConfig(file, { env: { KEEL_BUILD_ID: 'v3' } }).deployment).toMatchObject({ name: 'agents', buildId: 'v3', agents: { digest: 'autoUpgrade' } });
    expect(() => parseConfig({}, { source: 'f.yaml', env: { KEEL_BUILD_ID: 'v2' } })).toThrow(/f\.yaml: invalid config: .*deployment\.name/);
    expect(() => parseConfig({ deployment: { name: 'a', buildId: 'b', agents: { x: 'sometimes' } } }, { env: {} })).toThrow(/deployment\.agents\.x/);
  });

  it('names the path of each bad field', () => {
    expect(() => parseConfig({ agents: [{ name: 'a' }], activities: { tool: { heartbeatTimeout: 'soon' } } }, { source: 'f.yaml', env: {} })).toThrow(
      ConfigError,
    );
    try {
      parseConfig({ agents: [{ name: 'a' }], activities: { tool: { heartbeatTimeout: 'soon' } } }, { source: 'f.yaml', env: {} });
    } catch (error) {
      expect((error as Error).message).toContain('f.yaml: invalid config:');
      expect((error as Error).message).toContain('agents[0].model: Invalid input: expected string, received undefined');
      expect((error as Error).message).toContain('activities.tool.heartbeatTimeout: expected a duration');
    }
  });

  it('validates scripted replies and middleware refs', () => {
    expect(() => parseConfig({ models: [{ name: 'scripted/x', script: [{ txt: 'typo' }] }] }, { env: {} })).toThrow(/models\[0\]/);
    expect(() => parseConfig({ agents: [{ name: 'a', model: 'm', use: [{ config: {} }] }] }, { env: {} })).toThrow(/agents\[0\]\.use\[0\]\.name/);
  });
});

/**
 * Connection failures that are the config's fault say so and exit 2, as real `keel` processes:
 * a TLS certificate file that cannot be read names the field and the file; TLS on for a server
 * without it, or off for a server that speaks only TLS, names the mismatch and the fix (a worker
 * stops instead of retrying for ever).
 */
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:tls';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { KeelClient } from '../src/client/keel-client';
import { loadConfig } from '../src/config/load';
import { freePort } from '../src/node/ports';
import { ROOT, killAfterEach, runKeel, spawnKeel, writeTestConfig } from './support/processes';

const track = killAfterEach(afterEach);
const TLS_DIR = join(ROOT, 'test', 'fixtures', 'tls');

/** A server that speaks TLS only (and closes every connection): what a TLS-only Temporal looks like to a plaintext client. */
let tlsServer: Server;
let tlsAddress: string;
beforeAll(async () => {
  tlsServer = createServer({ key: readFileSync(join(TLS_DIR, 'test-only.key')), cert: readFileSync(join(TLS_DIR, 'test-only.crt')) }, (socket) => socket.end());
  await new Promise<void>((listening) => tlsServer.listen(0, '127.0.0.1', () => listening()));
  tlsAddress = `127.0.0.1:${(tlsServer.address() as { port: number }).port}`;
});
afterAll(() => {
  tlsServer?.close();
});

describe('connection errors that are the config’s fault', () => {
  it('names the TLS field and the file that cannot be read, exit 2', async () => {
    const { dir, configPath } = writeTestConfig('tls-files', {
      server: { enabled: false },
      temporal: { address: inject('temporalAddress'), tls: { clientCertPath: 'nowhere.crt', clientKeyPath: 'nowhere.key' } },
    });
    const status = await runKeel(['status', 'some-run', '--config', configPath]);
    expect(status.code).toBe(2);
    expect(status.stderr).toContain(`temporal.tls.clientCertPath: cannot read ${join(dir, 'nowhere.crt')}: ENOENT`);
    const worker = await runKeel(['worker', '--config', configPath, '--allow-empty']);
    expect(worker.code).toBe(2);
    expect(worker.stderr).toContain(`temporal.tls.clientCertPath: cannot read ${join(dir, 'nowhere.crt')}: ENOENT`);
  });

  it('says TLS is on for a server that answers without it, exit 2', async () => {
    const { configPath } = writeTestConfig('tls-on', { server: { enabled: false }, temporal: { address: inject('temporalAddress'), tls: true } });
    const status = await runKeel(['status', 'some-run', '--config', configPath]);
    expect(status.code).toBe(2);
    expect(status.stderr).toContain(`temporal.tls is on, but ${inject('temporalAddress')} answers without TLS: set temporal.tls: false`);
  });

  it('says TLS is off for a server that speaks only TLS; a worker stops instead of retrying', async () => {
    const { configPath } = writeTestConfig('tls-off', { server: { enabled: false }, temporal: { address: tlsAddress } });
    const status = await runKeel(['status', 'some-run', '--config', configPath]);
    expect(status.code).toBe(2);
    expect(status.stderr).toContain(`${tlsAddress} speaks TLS, but temporal.tls is off: set temporal.tls: true`);
    const worker = track(spawnKeel(['worker', '--config', configPath, '--allow-empty']));
    expect(await worker.exited).toBe(2);
    expect(worker.stderr()).toContain(`${tlsAddress} speaks TLS, but temporal.tls is off`);
  });

  it('says nothing accepts connections at once when the port refuses, from the client and from keel run, approve and holds', async () => {
    const refused = `127.0.0.1:${await freePort()}`;
    const { configPath } = writeTestConfig('refused', { server: { enabled: false }, temporal: { address: refused } });
    const started = Date.now();
    await expect(KeelClient.connect(loadConfig({ path: configPath }))).rejects.toThrow(
      `cannot reach Temporal at ${refused}: nothing accepts connections there (connection refused)`,
    );
    expect(Date.now() - started).toBeLessThan(1000);
    for (const args of [['run', 'helper', 'hi'], ['approve', 'some-run', 'i1'], ['holds']]) {
      const began = Date.now();
      const { code, stderr } = await runKeel([...args, '--config', configPath]);
      // The whole command, tsx start-up included; the SDK alone retried a refused address for 10 s and more.
      expect(Date.now() - began, args.join(' ')).toBeLessThan(8000);
      expect(code, args.join(' ')).not.toBe(0);
      expect(stderr).toContain(`cannot reach Temporal at ${refused}: nothing accepts connections there (connection refused). Start one with`);
    }
  });
});

/**
 * Certificates for the cluster lane's mTLS, made with the `openssl` CLI: a CA of the test's own,
 * the frontend's (and internode's) certificate for localhost and 127.0.0.1, a client certificate
 * for keel's processes, and one from a CA the server does not trust (to see a stranger refused).
 * Valid for two days; written under the directory given.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The files the cluster and keel's processes read. */
export interface ClusterCertificates {
  /** The CA that signed the server's and the client's certificates. */
  caCert: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
  /** A client certificate signed by a CA the server does not trust. */
  strangerCert: string;
  strangerKey: string;
}

async function openssl(args: string[]): Promise<void> {
  try {
    await run('openssl', args);
  } catch (error) {
    const failed = error as { stderr?: string; message: string };
    throw new Error(`openssl ${args.join(' ')} failed: ${failed.stderr || failed.message}`);
  }
}

/** A self-signed CA: `<name>.pem` and `<name>.key`. */
async function makeCa(dir: string, name: string, subject: string): Promise<{ cert: string; key: string }> {
  const cert = join(dir, `${name}.pem`);
  const key = join(dir, `${name}.key`);
  await openssl([
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    key,
    '-out',
    cert,
    '-days',
    '2',
    '-subj',
    subject,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  return { cert, key };
}

/** A leaf certificate signed by `ca`, with the given extensions. */
async function makeLeaf(
  dir: string,
  name: string,
  subject: string,
  ca: { cert: string; key: string },
  extensions: string[],
): Promise<{ cert: string; key: string }> {
  const cert = join(dir, `${name}.pem`);
  const key = join(dir, `${name}.key`);
  const request = join(dir, `${name}.csr`);
  const extensionFile = join(dir, `${name}.ext`);
  writeFileSync(extensionFile, `${['basicConstraints=CA:FALSE', 'keyUsage=critical,digitalSignature,keyEncipherment', ...extensions].join('\n')}\n`);
  await openssl(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', request, '-subj', subject]);
  await openssl([
    'x509',
    '-req',
    '-in',
    request,
    '-CA',
    ca.cert,
    '-CAkey',
    ca.key,
    '-set_serial',
    `0x${randomBytes(8).toString('hex')}`,
    '-out',
    cert,
    '-days',
    '2',
    '-extfile',
    extensionFile,
  ]);
  return { cert, key };
}

/** Makes the lane's certificates under `dir`. */
export async function makeCertificates(dir: string): Promise<ClusterCertificates> {
  mkdirSync(dir, { recursive: true });
  const [ca, strangerCa] = await Promise.all([
    makeCa(dir, 'ca', '/CN=keel cluster lane CA'),
    makeCa(dir, 'stranger-ca', '/CN=a CA the cluster does not trust'),
  ]);
  // Serial numbers are random: the leaves are signed at once, so a shared serial file would race.
  // The server's certificate serves the frontend and internode traffic, where each service is also a client of the others.
  const [server, client, stranger] = await Promise.all([
    makeLeaf(dir, 'server', '/CN=localhost', ca, ['subjectAltName=DNS:localhost,IP:127.0.0.1', 'extendedKeyUsage=serverAuth,clientAuth']),
    makeLeaf(dir, 'client', '/CN=keel', ca, ['extendedKeyUsage=clientAuth']),
    makeLeaf(dir, 'stranger', '/CN=stranger', strangerCa, ['extendedKeyUsage=clientAuth']),
  ]);
  return {
    caCert: ca.cert,
    serverCert: server.cert,
    serverKey: server.key,
    clientCert: client.cert,
    clientKey: client.key,
    strangerCert: stranger.cert,
    strangerKey: stranger.key,
  };
}

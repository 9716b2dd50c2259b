/**
 * Why a TLS connection to Temporal fails, said in the config's terms: the gRPC client only
 * reports "Failed to connect before the deadline" when the server refuses a client certificate
 * (mTLS) or the client refuses the server's. A handshake of Node's own, with the config's CA,
 * server name and client certificate, hears the alert and names the field to fix. Node side.
 */
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { resolve } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import type { KeelConfig } from '../config/schema';

type Connectable = Pick<KeelConfig, 'temporal' | 'baseDir'>;

/** How long to wait, after the handshake, for the server's verdict on the client certificate (TLS 1.3 sends it then). */
const VERDICT_MS = 1500;

/**
 * The reason the server at `temporal.address` and this config's TLS settings do not agree, or
 * undefined when a handshake finds none (or TLS is off: see tlsMismatch for that). Files are
 * read as the connection reads them; one that cannot be read is left to that error.
 */
export async function tlsRefusal(config: Connectable, timeoutMs = 5000): Promise<string | undefined> {
  const tls = config.temporal.tls;
  if (tls === false) return undefined;
  const files = tls === true ? {} : tls;
  const read = (path: string | undefined) => {
    if (!path) return undefined;
    try {
      return readFileSync(resolve(config.baseDir, path));
    } catch {
      return undefined;
    }
  };
  const address = config.temporal.address!;
  const separator = address.lastIndexOf(':');
  const host = address.slice(0, separator).replace(/^\[|\]$/g, '');
  const port = Number(address.slice(separator + 1));
  if (!host || !Number.isInteger(port)) return undefined;
  const servername = files.serverName ?? (isIP(host) ? undefined : host);
  const ca = read(files.serverRootCaCertPath);
  const cert = read(files.clientCertPath);
  const key = read(files.clientKeyPath);
  const clientCert = files.clientCertPath ? `the client certificate temporal.tls.clientCertPath (${files.clientCertPath})` : undefined;
  return new Promise((settle) => {
    const socket = tlsConnect({
      host,
      port,
      ALPNProtocols: ['h2'],
      ...(servername ? { servername } : {}),
      ...(ca ? { ca } : {}),
      ...(cert && key ? { cert, key } : {}),
    });
    // Unref'd: a diagnosis running beside a connection that worked never keeps the process up.
    socket.unref();
    let timer = setTimeout(() => done(undefined), timeoutMs).unref();
    const done = (reason: string | undefined) => {
      clearTimeout(timer);
      socket.destroy();
      settle(reason);
    };
    socket.once('secureConnect', () => {
      clearTimeout(timer);
      timer = setTimeout(() => done(undefined), VERDICT_MS).unref();
    });
    socket.once('error', (error: NodeJS.ErrnoException) => {
      const code = error.code ?? '';
      if (code === 'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED' || (code === 'ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE' && !cert))
        return done(`the server at ${address} requires a client certificate (mTLS): give temporal.tls.clientCertPath and clientKeyPath`);
      if (code === 'ERR_SSL_TLSV1_ALERT_UNKNOWN_CA' || code === 'ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE' || code === 'ERR_SSL_SSLV3_ALERT_CERTIFICATE_UNKNOWN')
        return done(
          `the server at ${address} refused ${clientCert ?? 'the client certificate'} (${/alert [a-z ]+/.exec(error.message)?.[0] ?? code}): it is not signed by a CA the server trusts for clients`,
        );
      if (code === 'ERR_SSL_SSLV3_ALERT_CERTIFICATE_EXPIRED')
        return done(`the server at ${address} refused ${clientCert ?? 'the client certificate'}: it has expired`);
      if (code === 'ERR_TLS_CERT_ALTNAME_INVALID')
        return done(
          `the certificate of the server at ${address} is not for ${servername ?? host}: set temporal.tls.serverName to a name it is for (${error.message})`,
        );
      if (code === 'CERT_HAS_EXPIRED') return done(`the certificate of the server at ${address} has expired`);
      if (/CERT|SELF_SIGNED|UNABLE_TO_VERIFY|UNABLE_TO_GET_ISSUER/.test(code))
        return done(
          `the certificate of the server at ${address} is not trusted (${error.message}): ${files.serverRootCaCertPath ? `it is not signed by temporal.tls.serverRootCaCertPath (${files.serverRootCaCertPath})` : 'give the CA that signed it as temporal.tls.serverRootCaCertPath'}`,
        );
      done(undefined);
    });
  });
}

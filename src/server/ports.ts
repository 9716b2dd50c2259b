/**
 * What is on a TCP port, asked cheaply: whether a listener holds it (by binding it for a
 * moment, as a server would) and whether an address accepts connections (a refused one
 * answers at once, where a gRPC client keeps retrying it until its timeout). Node side.
 */
import { connect, createServer } from 'node:net';

/** Options of `isPortInUse`. */
export interface PortInUseOptions {
  ip: string;
  port: number;
}

/** True when another listener holds `ip:port` (EADDRINUSE); other bind errors are left for the server to report. */
export function isPortInUse({ ip, port }: PortInUseOptions): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'EADDRINUSE'));
    probe.listen({ host: ip, port, exclusive: true }, () => probe.close(() => resolve(false)));
  });
}

/** `host:port` (`[v6]:port` too) split; undefined when `address` has no numeric port. */
function splitAddress(address: string): { host: string; port: number } | undefined {
  const match = /^\[?(.+?)\]?:(\d+)$/.exec(address);
  return match ? { host: match[1]!, port: Number(match[2]) } : undefined;
}

/** False when a TCP connection to `address` is refused or not made within `timeoutMs`; true when one is (or the address cannot be split). */
export function acceptsConnections(address: string, timeoutMs: number): Promise<boolean> {
  const target = splitAddress(address);
  if (!target) return Promise.resolve(true);
  return new Promise((resolve) => {
    const socket = connect({ ...target, timeout: timeoutMs });
    const finish = (accepted: boolean) => {
      socket.destroy();
      resolve(accepted);
    };
    socket.once('connect', () => finish(true));
    socket.once('timeout', () => finish(false));
    socket.once('error', () => finish(false));
  });
}

/** A loopback TCP port nothing listens on right now (for a server a test starts). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

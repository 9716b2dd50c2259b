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

/** What a TCP connection to an address came to: made, not made in time, or refused with its error code. */
type Probe = { made: true } | { made: false; refused?: string };

/** Tries a TCP connection to `address` for at most `timeoutMs` (an address that cannot be split counts as made). */
function probe(address: string, timeoutMs: number): Promise<Probe> {
  const target = splitAddress(address);
  if (!target) return Promise.resolve({ made: true });
  return new Promise((resolve) => {
    const socket = connect({ ...target, timeout: timeoutMs });
    const finish = (outcome: Probe) => {
      socket.destroy();
      resolve(outcome);
    };
    socket.once('connect', () => finish({ made: true }));
    socket.once('timeout', () => finish({ made: false }));
    socket.once('error', (error: NodeJS.ErrnoException) => finish({ made: false, refused: error.code ?? error.message }));
  });
}

/** False when a TCP connection to `address` is refused or not made within `timeoutMs`; true when one is (or the address cannot be split). */
export async function acceptsConnections(address: string, timeoutMs: number): Promise<boolean> {
  return (await probe(address, timeoutMs)).made;
}

/**
 * Why nothing can be reached at `address`, when that is known at once: the connection was
 * refused (`ECONNREFUSED`), the host does not resolve, or has no route. Undefined when a
 * connection is made, or not made within `timeoutMs` (a slow network is not a refusal).
 */
export async function connectionRefusal(address: string, timeoutMs: number): Promise<string | undefined> {
  const outcome = await probe(address, timeoutMs);
  if (outcome.made || outcome.refused === undefined) return undefined;
  const known: Record<string, string> = {
    ECONNREFUSED: 'nothing accepts connections there (connection refused)',
    ENOTFOUND: 'its host name does not resolve',
    EAI_AGAIN: 'its host name cannot be resolved now',
    EHOSTUNREACH: 'there is no route to its host',
    ENETUNREACH: 'its network is unreachable',
  };
  return known[outcome.refused] ?? `a connection fails: ${outcome.refused}`;
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

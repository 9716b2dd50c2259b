/** A loopback HTTP server whose answers a test programs, recording each request. */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';

/** A request the server saw. */
export interface SeenRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: unknown;
}

/** What to answer: status, JSON body, headers. */
export interface Answer {
  status?: number;
  body?: unknown;
  headers?: Record<string, string>;
  /** Raw text instead of JSON. */
  raw?: string;
  /** Raw pieces written one by one, `chunkDelayMs` apart (a server-sent event stream, say). */
  chunks?: string[];
  chunkDelayMs?: number;
}

/** A running loopback server. */
export interface FakeHttpServer {
  url: string;
  requests: SeenRequest[];
  /** Queues answers, used in order; the last one repeats. */
  answer: (...answers: Array<Answer | ((request: SeenRequest) => Answer)>) => void;
  close: () => Promise<void>;
}

/** Starts a server on 127.0.0.1 and a free port. */
export async function startFakeHttpServer(): Promise<FakeHttpServer> {
  const requests: SeenRequest[] = [];
  let queue: Array<Answer | ((request: SeenRequest) => Answer)> = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const seen: SeenRequest = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: text ? JSON.parse(text) : undefined };
      requests.push(seen);
      const next = queue.length > 1 ? queue.shift()! : queue[0];
      const answer = typeof next === 'function' ? next(seen) : (next ?? { status: 500, body: { error: { message: 'no answer programmed' } } });
      res.writeHead(answer.status ?? 200, { 'content-type': 'application/json', ...answer.headers });
      if (answer.chunks) {
        res.flushHeaders(); // the answer starts now; its pieces follow
        void (async () => {
          for (const chunk of answer.chunks!) {
            if (answer.chunkDelayMs) await new Promise((resolve) => setTimeout(resolve, answer.chunkDelayMs));
            res.write(chunk);
          }
          res.end();
        })();
        return;
      }
      res.end(answer.raw ?? JSON.stringify(answer.body ?? {}));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    answer: (...answers) => {
      queue = answers;
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

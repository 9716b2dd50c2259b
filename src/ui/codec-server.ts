/**
 * `keel codec-server`: the remote codec endpoint of the Temporal Web UI (and of `temporal
 * --codec-endpoint`), so an operator reads runs decrypted in the UI's browser and nowhere
 * else: the server holds the keys, Temporal never does. `POST /decode` and `POST /encode` take
 * and answer `{ payloads: [...] }` in Temporal's JSON form (metadata and data in base64), through
 * the codecs of temporal.yaml's `encryption`.
 *
 * Security: loopback by default; any other address needs KEEL_CODEC_TOKEN, sent by the UI as
 * `Authorization: Bearer` (the UI's "pass access token"). Cross-origin requests are answered
 * only for the configured origins (`codecServer.corsOrigins`, default the Temporal Web UI's
 * address). Node side.
 */
import { serve, type ServerType } from '@hono/node-server';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { Hono, type Context } from 'hono';
import { cors } from 'hono/cors';
import { timingSafeEqual } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import type { KeelConfig } from '../config/schema';
import { KeelError } from '../core/errors';
import { describeZodError } from '../core/schema-errors';
import { encryptionCodec } from '../security/encryption';
import { isLoopback, temporalUiUrlOf } from './addresses';

/** A payload as the Web UI sends it: metadata values and data in base64. */
const JsonPayloadSchema = z.object({
  metadata: z.record(z.string(), z.base64()).optional(),
  data: z.base64().optional(),
});
const PayloadsBodySchema = z.object({ payloads: z.array(JsonPayloadSchema) });

const fromJson = (payload: z.infer<typeof JsonPayloadSchema>): Payload => ({
  metadata: Object.fromEntries(Object.entries(payload.metadata ?? {}).map(([key, value]) => [key, Buffer.from(value, 'base64')])),
  data: Buffer.from(payload.data ?? '', 'base64'),
});

const toJson = (payload: Payload) => ({
  metadata: Object.fromEntries(Object.entries(payload.metadata ?? {}).map(([key, value]) => [key, Buffer.from(value ?? new Uint8Array()).toString('base64')])),
  data: Buffer.from(payload.data ?? new Uint8Array()).toString('base64'),
});

/** The routes: /decode and /encode through `codec`, behind CORS and the token. */
export function createCodecApp({ codec, token, corsOrigins }: { codec: PayloadCodec; token: string | undefined; corsOrigins: string[] }): Hono {
  const app = new Hono();
  app.use(
    '*',
    cors({
      origin: (origin) => (corsOrigins.includes(origin) ? origin : null),
      allowMethods: ['POST', 'OPTIONS'],
      allowHeaders: ['content-type', 'x-namespace', 'authorization'],
      credentials: true,
      maxAge: 600,
    }),
  );
  if (token !== undefined) {
    const expected = Buffer.from(token);
    app.use('*', async (c, next) => {
      if (c.req.method === 'OPTIONS') return next();
      const given = c.req.header('authorization')?.replace(/^Bearer /, '');
      if (given === undefined || given.length !== token.length || !timingSafeEqual(Buffer.from(given), expected))
        return c.json({ error: 'keel codec-server: send Authorization: Bearer <KEEL_CODEC_TOKEN>' }, 401);
      await next();
    });
  }
  const route = (direction: 'encode' | 'decode') => async (c: Context) => {
    let body: unknown;
    try {
      body = await c.req.json();
    } catch (error) {
      return c.json({ error: `the body is not JSON: ${(error as Error).message}` }, 400);
    }
    const parsed = PayloadsBodySchema.safeParse(body);
    if (!parsed.success) return c.json({ error: `expected { payloads: [{ metadata, data }] } in base64: ${describeZodError(parsed.error)}` }, 400);
    try {
      const payloads = await codec[direction](parsed.data.payloads.map(fromJson));
      return c.json({ payloads: payloads.map(toJson) });
    } catch (error) {
      return c.json({ error: (error as Error).message }, 422);
    }
  };
  app.post('/decode', route('decode'));
  app.post('/encode', route('encode'));
  return app;
}

/** A running codec server. */
export interface CodecServer {
  url: string;
  close(): Promise<void>;
}

/** Options of `startCodecServer`. */
export interface CodecServerOptions {
  config: KeelConfig;
  host?: string;
  port?: number;
  /** Required when `host` is not loopback (default: $KEEL_CODEC_TOKEN). */
  token?: string | undefined;
}

/** Starts the codec server of the config's `encryption`. */
export async function startCodecServer({
  config,
  host = config.codecServer.host,
  port = config.codecServer.port,
  token = process.env.KEEL_CODEC_TOKEN || undefined,
}: CodecServerOptions): Promise<CodecServer> {
  const codec = encryptionCodec(config);
  if (!codec) throw new KeelError('FAILED_PRECONDITION', 'keel codec-server decodes what encryption seals: temporal.yaml has no encryption');
  if (!isLoopback(host) && token === undefined)
    throw new KeelError(
      'FAILED_PRECONDITION',
      `keel codec-server listens on ${host}, which is not loopback: set KEEL_CODEC_TOKEN (a long random string; the Web UI sends it as its access token), or listen on 127.0.0.1`,
    );
  const temporalUiUrl = temporalUiUrlOf(config);
  const corsOrigins = config.codecServer.corsOrigins ?? (temporalUiUrl ? [new URL(temporalUiUrl).origin] : []);
  const app = createCodecApp({ codec, token, corsOrigins });
  const server: ServerType = await new Promise((resolve, reject) => {
    const started = serve({ fetch: app.fetch, hostname: host, port }, () => resolve(started));
    started.once('error', reject);
  });
  const bound = (server.address() as AddressInfo).port;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${bound}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
      }),
  };
}

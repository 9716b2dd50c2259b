/**
 * `keel codec-server`: the remote codec endpoint of the Temporal Web UI (and of `temporal
 * --codec-endpoint`), so an operator reads runs decrypted in the UI's browser and nowhere
 * else: the server holds the keys, Temporal never does. `POST /decode` and `POST /encode` take
 * and answer `{ payloads: [...] }` in Temporal's JSON form (metadata and data in base64), through
 * the codecs of temporal.yaml's `encryption`.
 *
 * Security: the routes sit behind keel's one HTTP guard (src/node/http-guard.ts): loopback by
 * default, any other address needs KEEL_CODEC_TOKEN, sent by the UI as `Authorization: Bearer`
 * (the UI's "pass access token"); without a token only requests naming this server in their
 * Host are answered, so no page can reach it by DNS rebinding; a body over
 * `codecServer.maxBodyBytes` is refused, never kept. Pages of other origins are answered (CORS) and
 * may encode or decode only for the configured origins (`codecServer.corsOrigins`, default the
 * Temporal Web UI's address). Node side.
 */
import type { Payload, PayloadCodec } from '@temporalio/common';
import { Hono, type Context } from 'hono';
import { z } from 'zod';
import type { KeelConfig } from '../config/schema';
import { KeelError } from '../core/errors';
import { describeZodError } from '../core/schema-errors';
import { startGuardedServer } from '../node/http-guard';
import { encryptionCodec } from '../security/encryption';
import { temporalUiUrlOf } from './addresses';

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

/** The routes: /decode and /encode through `codec` (the guard is startGuardedServer's). */
function createCodecApp(codec: PayloadCodec): Hono {
  const app = new Hono();
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
  const temporalUiUrl = temporalUiUrlOf(config);
  const origins = config.codecServer.corsOrigins ?? (temporalUiUrl ? [new URL(temporalUiUrl).origin] : []);
  const server = await startGuardedServer({
    name: 'keel codec-server',
    host,
    port,
    app: createCodecApp(codec),
    token,
    tokenVariable: 'KEEL_CODEC_TOKEN',
    maxBodyBytes: config.codecServer.maxBodyBytes,
    crossOrigin: { origins, allowHeaders: ['content-type', 'x-namespace', 'authorization'] },
  });
  return { url: server.origin, close: () => server.close() };
}

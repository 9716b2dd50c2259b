/**
 * The temporal.yaml schema (docs/configuration.md). Every field is optional with a default.
 */
import { z } from 'zod';
import { DurationSchema } from '../core/duration';
import { ApproverRulesSchema } from '../core/approvers';
import { ActivitySpecSchema, MiddlewareRefSchema } from '../core/run';
import { ScriptedReplySchema } from '../core/scripted-reply';
import { OutputOptionSchema } from '../core/output';
import { ModelPriceSchema } from '../core/cost';
import { ModelRateLimitSchema } from '../core/rate-limit';
import { FairnessConfigSchema } from '../core/fairness';

/** Fields every model entry may have: its price (for `usage.cost`) and its rate limit across workers. */
const ModelLimitFields = {
  /** USD per million tokens: each call's usage then carries `cost`. */
  price: ModelPriceSchema.optional(),
  /** Calls to this model go to a task queue of their own, rate-limited by Temporal (docs/cost.md, "Rate limits"). */
  rateLimit: ModelRateLimitSchema.optional(),
  /** Calls run as local activities, in the worker that runs the run's workflow task (docs/local-calls.md). */
  local: z.boolean().optional(),
};

/** Connection to the Temporal service. */
export const ConnectionConfigSchema = z
  .object({
    /** host:port; defaults to the embedded dev server's address. */
    address: z.string().min(1).optional(),
    /** The client's namespace; the embedded dev server creates it too. */
    namespace: z.string().min(1).default('default'),
    /** true for system TLS, or client certificate files (mTLS). */
    tls: z
      .union([
        z.boolean(),
        z
          .object({
            serverName: z.string().optional(),
            serverRootCaCertPath: z.string().optional(),
            clientCertPath: z.string().optional(),
            clientKeyPath: z.string().optional(),
          })
          .strict(),
      ])
      .default(false),
    apiKey: z.string().optional(),
  })
  .strict();

/** The embedded dev server (`temporal server start-dev`); it serves `temporal.namespace`. */
export const ServerConfigSchema = z
  .object({
    enabled: z.boolean().default(true),
    /** Path of the temporal binary; else $TEMPORAL_CLI, PATH, .keel/bin, then installed. */
    binary: z.string().optional(),
    ip: z.string().default('127.0.0.1'),
    port: z.number().int().min(1).max(65535).default(7233),
    uiPort: z.number().int().min(1).max(65535).default(8233),
    /** SQLite file of the dev server; relative to the config file. */
    dbFile: z.string().default('.keel/temporal.db'),
    logLevel: z.enum(['debug', 'info', 'warn', 'error', 'never']).default('warn'),
    /** The Web UI's remote codec endpoint, e.g. `keel codec-server`'s http://127.0.0.1:8235: the UI shows encrypted payloads decoded. */
    uiCodecEndpoint: z.url().optional(),
  })
  .strict();

/** `keel ui` (and `keel dev`, which starts it): where it listens, and where the Temporal Web UI is. */
export const UiConfigSchema = z
  .object({
    /** Loopback by default; any other address needs KEEL_UI_TOKEN. */
    host: z.string().default('127.0.0.1'),
    /** 0 picks a free port. */
    port: z.number().int().min(0).max(65535).default(8234),
    /** The Temporal Web UI the run view links to; default: the embedded dev server's (when server.enabled). */
    temporalUiUrl: z.url().optional(),
  })
  .strict();

/** What `keel ui` (at `/mcp`) and `keel mcp` serve to other agents (docs/mcp.md). */
export const ServeConfigSchema = z
  .object({
    /** The agents exposed as MCP tools, by name (`'*'`: every agent the config defines); none by default, so nothing is exposed by accident. */
    agents: z.array(z.string().min(1)).default([]),
    /** Origins of web apps whose pages may use the chat endpoint (`/api/chat`) from another origin (CORS); none by default. */
    origins: z.array(z.url()).default([]),
    /** The address people reach keel serve at: decision links in webhooks point there (absent: webhooks carry no links). */
    publicUrl: z.url().optional(),
    /** How long a decision link may be used (docs/notify.md). */
    linkTtl: DurationSchema.default('1 day'),
  })
  .strict();

/**
 * Who is asking (docs/auth.md): keel serve verifies an OIDC bearer token against the issuer's
 * keys, or takes the user a trusted proxy names; decisions are then recorded as that identity,
 * and the holds an agent's `approvers` bind are decided only by identities they name.
 */
export const AuthConfigSchema = z.union([
  z
    .object({
      /** The token issuer (`iss`), checked. */
      issuer: z.string().min(1),
      /** The audience (`aud`) tokens must be for, checked. */
      audience: z.string().min(1),
      /** The issuer's keys: a JWKS URL (https://.../jwks.json), or a JWKS file relative to the config file. */
      jwks: z.string().min(1),
      /** The claim listing the identity's groups. */
      groupsClaim: z.string().min(1).default('groups'),
      /** The claim naming the identity's tenant (docs/tenants.md); a token without it has no tenant. */
      tenantClaim: z.string().min(1).default('tenant'),
    })
    .strict(),
  z
    .object({
      trustedProxy: z
        .object({
          /** The header the proxy names the user in. */
          header: z.string().min(1),
          /** The header it lists the user's groups in (comma separated), if any. */
          groupsHeader: z.string().min(1).optional(),
          /** The proxy's addresses: a request from any other is refused. */
          from: z.array(z.string().min(1)).min(1),
          /** The header it names the user's tenant in, if any (docs/tenants.md). */
          tenantHeader: z.string().min(1).optional(),
        })
        .strict(),
    })
    .strict(),
]);
export type AuthConfig = z.infer<typeof AuthConfigSchema>;

/**
 * Who may do what to a run (docs/tenants.md): each action lists who: `owner` (who started it),
 * `tenant` (anyone of its tenant), `tenant:<group>` (anyone of its tenant in that group),
 * `group:<name>` (anyone in that group, of any tenant), `user:<subject>`, or `*` (anyone verified).
 */
const AccessRuleSchema = z
  .array(z.string().regex(/^(owner|tenant|\*|tenant:.+|group:.+|user:.+)$/, 'owner, tenant, tenant:<group>, group:<name>, user:<subject> or *'))
  .min(1);
const DEFAULT_ACCESS = ['owner', 'tenant:admins'];
export const AccessConfigSchema = z
  .object({
    /** List it, read it, follow its events, read a chat's history. */
    read: AccessRuleSchema.default(() => [...DEFAULT_ACCESS]),
    /** Send it more: a steering message, a chat's or session's next turn. */
    steer: AccessRuleSchema.default(() => [...DEFAULT_ACCESS]),
    /** Cancel it. */
    abort: AccessRuleSchema.default(() => [...DEFAULT_ACCESS]),
    /** Start a new run from one of its turns. */
    fork: AccessRuleSchema.default(() => [...DEFAULT_ACCESS]),
    /** Decide its holds (an agent's `approvers` then bind who, among these, may decide a hold). */
    decide: AccessRuleSchema.default(() => [...DEFAULT_ACCESS]),
  })
  .strict();
export type AccessConfig = z.infer<typeof AccessConfigSchema>;

/** One webhook told of holds (docs/notify.md). */
export const NotifyTargetSchema = z
  .object({
    /** Where each event is POSTed. */
    url: z.url(),
    /** The environment variable holding the secret each body is signed with (HMAC-SHA256); a worker refuses to start while it is unset. */
    secret: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'the name of an environment variable (the secret itself stays in the environment)'),
    /** `keel`: keel's JSON event; `slack`: a Slack message (blocks with the question, the input, Approve and Deny links). */
    format: z.enum(['keel', 'slack']).default('keel'),
  })
  .strict();
export type NotifyTarget = z.infer<typeof NotifyTargetSchema>;

/** `keel codec-server`: the Temporal Web UI's remote codec endpoint (src/ui/codec-server.ts). */
export const CodecServerConfigSchema = z
  .object({
    /** Loopback by default; any other address needs KEEL_CODEC_TOKEN. */
    host: z.string().default('127.0.0.1'),
    /** 0 picks a free port. */
    port: z.number().int().min(0).max(65535).default(8235),
    /** Origins whose pages may call it (the Web UI's); default: ui.temporalUiUrl's, else the embedded dev server's UI. */
    corsOrigins: z.array(z.url()).optional(),
    /**
     * The largest request body it takes, in bytes. The default holds the payloads of the largest
     * request Temporal takes (4 MB) in the Web UI's base64 JSON; a larger body is refused (413), never kept.
     */
    maxBodyBytes: z
      .number()
      .int()
      .min(1024)
      .default(8 * 1024 * 1024),
  })
  .strict();

/**
 * Runs a worker keeps in its sticky cache by default (`worker.maxCachedWorkflows`): a cached run
 * answers its next task without replay; an evicted one costs nothing until it has work again and
 * then replays (bench/RESULTS.md, "Many waiting runs", measures both).
 */
export const DEFAULT_MAX_CACHED_WORKFLOWS = 1000;

/** Worker tuning. */
export const WorkerConfigSchema = z
  .object({
    maxConcurrentActivityTaskExecutions: z.number().int().min(1).default(100),
    maxConcurrentWorkflowTaskExecutions: z.number().int().min(2).default(40),
    /** Runs kept in the sticky cache (0: none, every task replays); bounds the worker's memory whatever the number of runs waiting. */
    maxCachedWorkflows: z.number().int().min(0).default(DEFAULT_MAX_CACHED_WORKFLOWS),
    shutdownGraceTime: DurationSchema.default('10 seconds'),
    /** Most time between heartbeats sent to the server: bounds how late a tool learns of a cancellation. */
    maxHeartbeatThrottleInterval: DurationSchema.default('2 seconds'),
    /** How long a workflow task waits for the worker that cached the run before any worker takes it. */
    stickyQueueScheduleToStartTimeout: DurationSchema.default('10 seconds'),
    /**
     * How long, from its first refusal, a call naming an agent, model or tool this worker lacks is
     * retried (on any worker of the queue: a rolling deploy's new workers may have it) before it
     * may fail NOT_FOUND; it fails only once every worker polling the queue has refused it too.
     */
    notRegisteredRetryFor: DurationSchema.default('1 minute'),
  })
  .strict();

/**
 * Timeouts and retry policy of one kind of activity, with that kind's own defaults. Each
 * field defaults on its own (`prefault({})` runs the object through its field defaults), so
 * setting one field keeps the others, nested `retry` included.
 */
function activitySpec({ startToCloseTimeout }: { startToCloseTimeout: z.output<typeof DurationSchema> }) {
  return ActivitySpecSchema.extend({ startToCloseTimeout: DurationSchema.default(startToCloseTimeout) }).prefault({});
}

/** Fields every HTTP model entry has. */
const HttpModelFields = {
  name: z.string().min(1),
  /** The provider's model id; defaults to the part of `name` after the first `/`. */
  model: z.string().optional(),
  baseUrl: z.url().optional(),
  apiKey: z.string().optional(),
  /** Name of an environment variable holding the API key. */
  apiKeyEnv: z.string().optional(),
  config: z.record(z.string(), z.unknown()).optional(),
  /** Ask for the answer as a stream (default true): text reaches clients while the model writes. */
  stream: z.boolean().optional(),
  ...ModelLimitFields,
};

/**
 * An AI SDK provider package's model: `factory` (an export of `package`) is called with
 * `options` (plus the `optionsFromEnv` fields read from the environment) and gives a provider,
 * whose language model `model` keel runs (src/models/ai-sdk.ts). `instance` names an export
 * that is a provider already (`openai` of `@ai-sdk/openai`) instead.
 */
export const AiSdkModelConfigSchema = z
  .object({
    name: z.string().min(1),
    provider: z.literal('ai-sdk'),
    /** The provider package, loaded from the project's node_modules, e.g. `@ai-sdk/openai-compatible`. */
    package: z.string().min(1),
    factory: z.string().min(1).optional(),
    instance: z.string().min(1).optional(),
    options: z.record(z.string(), z.unknown()).default({}),
    /** Options read from environment variables: option name to variable name, e.g. `{ apiKey: OPENAI_API_KEY }`. */
    optionsFromEnv: z.record(z.string(), z.string()).default({}),
    /** The provider's model id; defaults to the part of `name` after the first `/`. */
    model: z.string().min(1).optional(),
    /** AI SDK call options sent with every request (temperature, maxOutputTokens, providerOptions). */
    config: z.record(z.string(), z.unknown()).optional(),
    /** Call the model's `doStream` (default true), so text reaches clients while it writes; false calls `doGenerate`. */
    stream: z.boolean().optional(),
    ...ModelLimitFields,
  })
  .strict()
  .refine((entry) => (entry.factory === undefined) !== (entry.instance === undefined), {
    error: 'give exactly one of factory (an export to call with options) or instance (an export that is a provider)',
  });

/** A model declared in the config: scripted, an OpenAI-compatible endpoint, Anthropic, or an AI SDK provider's. */
/**
 * A model entry, told apart by `provider` (absent means `scripted`), so an error names the
 * field of the entry's own provider that is wrong, not every other provider's fields.
 */
export const ModelConfigSchema = z.preprocess(
  (entry) => (typeof entry === 'object' && entry !== null && !('provider' in entry) ? { ...entry, provider: 'scripted' } : entry),
  z.discriminatedUnion('provider', [
    z
      .object({
        name: z.string().min(1),
        provider: z.literal('scripted'),
        script: z.array(ScriptedReplySchema),
        ...ModelLimitFields,
      })
      .strict(),
    z.object({ ...HttpModelFields, provider: z.literal('openai-compatible') }).strict(),
    z.object({ ...HttpModelFields, provider: z.literal('anthropic'), maxTokens: z.number().int().min(1).optional() }).strict(),
    AiSdkModelConfigSchema,
  ]),
);
export type AiSdkModelConfig = z.infer<typeof AiSdkModelConfigSchema>;
export type ModelConfig = z.infer<typeof ModelConfigSchema>;

const McpServerFields = {
  /** The server's name: its tools are registered as `<name>_<tool>` unless `toolPrefix` says otherwise. */
  name: z.string().regex(/^[A-Za-z0-9_-]+$/, 'letters, digits, _ and - only'),
  toolPrefix: z
    .string()
    .regex(/^[A-Za-z0-9_-]*$/, 'letters, digits, _ and - only')
    .optional(),
  /** The server's tools to register (by the server's names); all of them when absent. */
  tools: z.array(z.string().min(1)).optional(),
  /** How long one call may wait for the server's answer (progress notifications restart it); then it fails DEADLINE_EXCEEDED. */
  callTimeout: DurationSchema.default('2 minutes'),
};

/** A Model Context Protocol server whose tools the worker registers: a command (stdio) or a URL (streamable HTTP). */
export const McpServerConfigSchema = z.union([
  z
    .object({
      ...McpServerFields,
      command: z.string().min(1),
      args: z.array(z.string()).default([]),
      /** Added to a small safe environment (PATH, HOME, ...), as the SDK does. */
      env: z.record(z.string(), z.string()).default({}),
      /** Defaults to the config's directory. */
      cwd: z.string().optional(),
    })
    .strict(),
  z.object({ ...McpServerFields, url: z.url(), headers: z.record(z.string(), z.string()).default({}) }).strict(),
]);
export type McpServerConfig = z.infer<typeof McpServerConfigSchema>;

/** An agent declared without code. */
export const AgentConfigSchema = z
  .object({
    name: z.string().min(1),
    description: z.string().default(''),
    model: z.string().min(1),
    system: z.string().optional(),
    config: z.record(z.string(), z.unknown()).optional(),
    tools: z.array(z.string()).default([]),
    maxTurns: z.number().int().min(0).default(5),
    use: z.array(MiddlewareRefSchema).default([]),
    /** `client` (default): the caller keeps the conversation; `server`: a session workflow per session id keeps it. */
    session: z.enum(['client', 'server']).default('client'),
    /** The structured answer: a JSON Schema, or `{ schema, retries?, name? }` (docs/structured-output.md). */
    output: OutputOptionSchema.optional(),
    /** Who may decide its holds, by tool name ('*': any): `group:<name>` or `user:<subject>` of a verified identity, or a rule with a quorum or an escalation (docs/auth.md). */
    approvers: ApproverRulesSchema.optional(),
    /** Which calls run as local activities (docs/local-calls.md): `models` all or none, `tools` all, none or a list. */
    local: z
      .object({ models: z.boolean().optional(), tools: z.union([z.boolean(), z.array(z.string().min(1))]).optional() })
      .strict()
      .optional(),
  })
  .strict();

/**
 * Temporal External Storage: payloads over `threshold` bytes (a big tool output, a long
 * conversation carried into the next run of a chain, a large prompt or result) go to a store
 * and history keeps a reference. `file` (default) writes under `directory` and suits workers
 * on one machine or a shared mount; `s3` suits workers on several machines; `none` keeps
 * every payload inline (each then limited to the server's 2 MiB).
 */
export const ExternalStorageConfigSchema = z
  .object({
    driver: z.enum(['file', 's3', 'none']).default('file'),
    /** Payloads larger than this many bytes are stored (the SDK's default: 256 KiB). */
    threshold: z
      .number()
      .int()
      .min(0)
      .default(256 * 1024),
    /** Directory of the file driver; relative to the config file. */
    directory: z.string().min(1).default('.keel/payloads'),
    /** The S3 driver (`@temporalio/external-storage-s3`); credentials come from the AWS SDK's usual sources (AWS_ACCESS_KEY_ID, profiles, roles). */
    s3: z
      .object({
        bucket: z.string().min(1),
        region: z.string().min(1).default('us-east-1'),
        /** An S3-compatible endpoint (MinIO, a local server); omit for AWS. */
        endpoint: z.url().optional(),
        /** Path-style URLs (bucket in the path), as most S3-compatible servers need. */
        forcePathStyle: z.boolean().default(false),
      })
      .strict()
      .optional(),
  })
  .strict()
  .refine((storage) => storage.driver !== 's3' || storage.s3 !== undefined, { error: 'driver s3 needs s3.bucket', path: ['s3'] });

/** How workers sign what clients must not forge (held calls, task ids): src/security/signing-keys.ts. */
export const SecurityConfigSchema = z
  .object({
    /**
     * File holding the signing key, relative to the config file; created with a random key on
     * first use. KEEL_SIGNING_KEY (comma-separated keys, the first signs) takes precedence: set it
     * on every worker when workers run on several machines.
     */
    signingKeyFile: z.string().min(1).default('.keel/signing-key'),
  })
  .strict();

/** Where an encryption key is read from: an environment variable or a file (relative to the config file). */
const EncryptionKeySourceSchema = z.union([z.object({ env: z.string().min(1) }).strict(), z.object({ file: z.string().min(1) }).strict()]);

/**
 * Payload encryption (src/security/encryption.ts): AES-256-GCM over every payload keel's
 * processes send to Temporal (inputs, results, memos, signals, queries), before External
 * Storage, so stored blobs are ciphertext too. `key` names the key new payloads are encrypted
 * with; every key in `keys` still decrypts (rotation). Each key is 32 bytes, base64 or hex.
 */
export const EncryptionConfigSchema = z
  .object({
    key: z.string().min(1),
    keys: z.record(z.string().min(1), EncryptionKeySourceSchema),
  })
  .strict()
  .refine((encryption) => encryption.key in encryption.keys, {
    path: ['key'],
    error: (issue) => `"${String((issue.input as { key?: unknown }).key)}" is not one of keys`,
  });

/** Metrics of worker processes (src/telemetry/metrics.ts, docs/metrics.md). */
export const MetricsConfigSchema = z
  .object({
    /** `host:port` of a Prometheus endpoint on each worker (/metrics); off when absent. Else OTEL_* variables may send them over OTLP. */
    prometheus: z.string().min(1).optional(),
    /** Tenants whose spend the metrics name (keel_tenant_*); every other tenant's is counted as `other`, so a series is never a caller's text. */
    tenants: z.array(z.string().min(1)).max(100).default([]),
  })
  .strict();

/** How runs move between builds of a Worker Deployment: kept on the build that started them, or moved to the current one. */
export const VersioningBehaviorSchema = z.enum(['pinned', 'autoUpgrade']);

/**
 * Temporal Worker Versioning (docs/deploys.md, "Safe deploys"): each worker polls as one build of a
 * Worker Deployment, and a run stays on the build that started it (pinned) unless its agent
 * says `autoUpgrade`. Off when absent; KEEL_DEPLOYMENT_NAME and KEEL_BUILD_ID set it too.
 */
export const DeploymentConfigSchema = z
  .object({
    /** The Worker Deployment: one name for every build of this set of agents. */
    name: z.string().min(1),
    /** This build's id (a release tag, a commit): runs pinned to it are served only by its workers. */
    buildId: z.string().min(1),
    /** How runs move between builds unless their agent says otherwise. */
    defaultBehavior: VersioningBehaviorSchema.default('pinned'),
    /** Per agent, by name: `autoUpgrade` for runs that should follow new builds (their workflow changes then need `patched()`). */
    agents: z.record(z.string().min(1), VersioningBehaviorSchema).default({}),
  })
  .strict();

/** The whole temporal.yaml. */
export const KeelConfigSchema = z
  .object({
    temporal: ConnectionConfigSchema.prefault({}),
    taskQueue: z.string().min(1).default('keel'),
    server: ServerConfigSchema.prefault({}),
    ui: UiConfigSchema.prefault({}),
    serve: ServeConfigSchema.prefault({}),
    /** How keel serve knows who asks (docs/auth.md); absent: it does not (loopback, or KEEL_UI_TOKEN). */
    auth: AuthConfigSchema.optional(),
    /** With `auth:` on, who may read, steer, abort, fork and decide each run (docs/tenants.md). */
    access: AccessConfigSchema.prefault({}),
    /** The Temporal priority of each kind of work and each tenant's weight (docs/tenants.md, "Fair shares"). */
    fairness: FairnessConfigSchema.prefault({}),
    /** Webhooks told when a hold is raised, decided or expires; none by default (docs/notify.md). */
    notify: z.array(NotifyTargetSchema).default([]),
    codecServer: CodecServerConfigSchema.prefault({}),
    worker: WorkerConfigSchema.prefault({}),
    externalStorage: ExternalStorageConfigSchema.prefault({}),
    /** Off unless set: payloads are then plaintext in Temporal and in the payload store. */
    encryption: EncryptionConfigSchema.optional(),
    metrics: MetricsConfigSchema.prefault({}),
    /** Worker Versioning; off when absent (docs/deploys.md, "Safe deploys"). */
    deployment: DeploymentConfigSchema.optional(),
    activities: z
      .object({
        model: activitySpec({ startToCloseTimeout: '5 minutes' }),
        tool: activitySpec({ startToCloseTimeout: '10 minutes' }),
      })
      .strict()
      .prefault({}),
    modules: z.array(z.string().min(1)).default([]),
    /** Workflow-safe modules that call registerMiddleware; bundled with the workflow code. */
    middlewareModules: z.array(z.string().min(1)).default([]),
    agents: z.array(AgentConfigSchema).default([]),
    models: z.array(ModelConfigSchema).default([]),
    /** MCP servers whose tools every worker registers (listed once per worker). */
    mcpServers: z.array(McpServerConfigSchema).default([]),
    security: SecurityConfigSchema.prefault({}),
  })
  .strict();
/** A validated config with defaults filled in. */
export type KeelConfig = z.infer<typeof KeelConfigSchema> & {
  /** Directory of the config file: relative paths resolve against it. */
  baseDir: string;
  /** Path of the file it was read from, if any. */
  path?: string;
};
/** A config as written (every field optional). */
export type KeelConfigInput = z.input<typeof KeelConfigSchema>;

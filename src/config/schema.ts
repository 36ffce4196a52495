import { isAbsolute } from 'node:path';
import { z } from 'zod';
import { basePolicyShape, type PolicyConfig, type PolicyTypeDefinition } from './policy-type';
import { quote } from './problems';
import { duration, MIN_PERIOD_MS } from './validators';

/**
 * The policy file, version 1: the single source of the configuration's types, of its validation and of the JSON
 * Schema that `forgewarden schema` prints. Keys are snake_case like the forge's own parameters.
 */
export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

/** The forge's cap on an access token's lifetime (`MAX_PERSONAL_ACCESS_TOKEN_LIFETIME_IN_DAYS`). */
const MAX_TOKEN_LIFETIME_MS = 365 * 24 * 60 * 60 * 1000;

const tokenRotationSchema = z
  .strictObject({
    before_expiry: duration({ min: 24 * 60 * 60 * 1000 })
      .prefault('30d')
      .describe('Rotates the token pair once either token expires within this long.'),
    lifetime: duration({ min: 24 * 60 * 60 * 1000 })
      .prefault('90d')
      .refine((ms) => ms <= MAX_TOKEN_LIFETIME_MS, { error: 'must be at most 365d: the forge refuses a longer expiry' })
      .describe('The expiry every rotation asks for, from the day it rotates.'),
    settle: duration({ min: 60_000 })
      .prefault('10m')
      .describe(
        'How long a token no replica authenticates with any more waits before it is rotated: requests sent with it must have ended.',
      ),
    replicas: z
      .number()
      .int()
      .min(1)
      .max(64)
      .default(1)
      .describe('Daemons that use this token file (replicas on one Redis).'),
    shared_file: z
      .boolean()
      .default(false)
      .describe('True once every replica reads this very file (shared storage): required with more than one replica.'),
  })
  .describe(
    "Rotates the daemon's own token: gitlab.token_file holds a pair of personal access tokens, each rotated by id with the other, so an answer lost on the way leaves a working token (docs/operations.md).",
  );

type GitlabInput = {
  token?: string;
  token_file?: string;
  timeout: number;
  token_rotation?: z.output<typeof tokenRotationSchema>;
};

/** Where self-rotation cannot be safe, each problem at the key that makes it so. */
function tokenRotationProblems(gitlab: GitlabInput): { path: (string | number)[]; message: string }[] {
  const rotation = gitlab.token_rotation;
  if (rotation === undefined) return [];
  const problems: { path: (string | number)[]; message: string }[] = [];
  if (gitlab.token_file === undefined) {
    problems.push({
      path: ['token_rotation'],
      message:
        'rotation writes each new value into gitlab.token_file: a token given in the file or the environment would be lost at the next restart',
    });
  }
  if (rotation.before_expiry >= rotation.lifetime) {
    problems.push({
      path: ['token_rotation', 'before_expiry'],
      message: 'must be shorter than lifetime, or every rotation would be due again at once',
    });
  }
  if (rotation.settle < 2 * gitlab.timeout) {
    problems.push({
      path: ['token_rotation', 'settle'],
      message:
        'must be at least twice gitlab.timeout: a request sent with a token just retired may still be in flight when it is rotated',
    });
  }
  if (rotation.replicas > 1 && !rotation.shared_file) {
    problems.push({
      path: ['token_rotation', 'shared_file'],
      message: `${rotation.replicas} replicas rotate one token: each must read the same token file, or a replica goes on with a rotated token and the forge's reuse detection revokes the new one; set shared_file: true once the file is on storage they share`,
    });
  }
  return problems;
}

const gitlabSchema = z
  .strictObject({
    url: z.url({ protocol: /^https?$/, error: 'expected the forge\'s base URL, such as "https://gitlab.example.com"' }),
    token: z
      .string({ error: 'expected an access token (set GITLAB_TOKEN, or write token: ${GITLAB_TOKEN})' })
      .min(1, {
        error: 'the token is empty',
      })
      .optional(),
    token_file: z
      .string()
      .refine((path) => isAbsolute(path), {
        error: 'expected an absolute path: every replica and restart must find the same file',
      })
      .optional()
      .describe(
        'Instead of token: a file holding the token (read at start and after a 401), written by the daemon when it rotates its own token.',
      ),
    token_rotation: tokenRotationSchema.optional(),
    // At least 1s: undici reads a zero timeout as "no timeout at all", the opposite of what `0s` seems to say.
    timeout: duration({ min: MIN_PERIOD_MS })
      .prefault('30s')
      .describe('How long one request may take, connection included.'),
    connect_timeout: duration({ min: MIN_PERIOD_MS })
      .prefault('10s')
      .describe('How long connecting to the forge may take.'),
    start_timeout: duration({ min: MIN_PERIOD_MS })
      .optional()
      .describe(
        "How long a command's first look at the forge retries a 429, a 5xx or a failed connection (default: timeout).",
      ),
    max_requests_per_minute: z
      .number()
      .int()
      .min(1)
      .max(100_000)
      .default(600)
      .describe('One request budget shared by all replicas.'),
    concurrency: z
      .number()
      .int()
      .min(1)
      .max(64)
      .default(4)
      .describe(
        'Requests in flight at once, per replica; also the pages of a listing read ahead and the projects a pass reads at once.',
      ),
  })
  // Said with the section's other problems (a missing url too), as a missing required key would be.
  .refine((gitlab) => gitlab.token !== undefined || gitlab.token_file !== undefined, {
    path: ['token'],
    error: 'expected an access token (set GITLAB_TOKEN, or write token: ${GITLAB_TOKEN}, or token_file)',
    when: (payload) => {
      const input = payload.value as { token?: unknown; token_file?: unknown } | undefined;
      return typeof input === 'object' && input !== null && input.token === undefined && input.token_file === undefined;
    },
  })
  .superRefine((gitlab, ctx) => {
    if (gitlab.token !== undefined && gitlab.token_file !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['token_file'],
        message:
          'give either gitlab.token or gitlab.token_file, not both (GITLAB_TOKEN stands in for token only when there is no token_file)',
      });
    }
    for (const problem of tokenRotationProblems(gitlab)) ctx.addIssue({ code: 'custom', ...problem });
  })
  .describe('The forge Forgewarden talks to.');

/** One server as `host:port` (an IPv6 address in brackets), as Sentinel and Cluster nodes are named. */
const redisNode = z
  .string({ error: 'expected "host:port"' })
  .regex(/^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):\d{1,5}$/, { error: 'expected "host:port", such as "10.0.0.5:26379"' });

const redisTlsSchema = z.strictObject({
  ca_file: z
    .string()
    .min(1)
    .optional()
    .describe('PEM file of the CA that signed the server certificate (default: the system CAs).'),
  server_name: z
    .string()
    .min(1)
    .optional()
    .describe('The name the server certificate must carry, when the address names the host otherwise.'),
});

const TOPOLOGIES = ['url', 'sentinels', 'cluster'] as const;

const redisSchema = z
  .strictObject({
    url: z
      .string()
      .regex(/^rediss?:\/\//, { error: 'expected a redis:// or rediss:// URL' })
      .optional()
      .describe(
        `One Redis server (or a managed service's single endpoint); ${DEFAULT_REDIS_URL} when neither sentinels nor cluster is given.`,
      ),
    sentinels: z
      .array(redisNode)
      .min(1, { error: 'name at least one sentinel' })
      .optional()
      .describe(
        'Sentinels that know the primary (with master_name): the daemon follows the primary they name across a failover.',
      ),
    master_name: z
      .string()
      .min(1, { error: 'the name is empty' })
      .optional()
      .describe('The name the sentinels monitor the primary under.'),
    sentinel_password: z
      .string()
      .min(1, { error: 'the password is empty' })
      .optional()
      .describe("The sentinels' own password, when they have one; masked in every log line."),
    sentinel_tls: redisTlsSchema
      .optional()
      .describe('Connects to the sentinels with TLS, verifying their certificate.'),
    cluster: z
      .array(redisNode)
      .min(1, { error: 'name at least one cluster node' })
      .optional()
      .describe(
        'Nodes of a Redis Cluster (any of them; the rest are found). Every key then carries the hash tag {prefix}.',
      ),
    prefix: z
      .string()
      .regex(/^[A-Za-z0-9_-]+$/, { error: 'a prefix is letters, digits, "_" or "-"' })
      .default('forgewarden')
      .describe('Prefix of every Redis key, so several deployments can share one Redis.'),
    connect_timeout: duration().prefault('10s').describe('How long startup waits for Redis before giving up.'),
    username: z
      .string()
      .min(1, { error: 'the username is empty' })
      .optional()
      .describe('An ACL user (Redis 6 or later); also possible in the URL.'),
    password: z
      .string()
      .min(1, { error: 'the password is empty' })
      .optional()
      .describe(
        'The password (of the ACL user, or requirepass); write password: ${REDIS_PASSWORD}. Masked in every log line.',
      ),
    tls: redisTlsSchema
      .optional()
      .describe('Connects with TLS (as a rediss:// URL does), verifying the server certificate.'),
    min_replicas_acked: z
      .number({ error: 'expected a number of replicas' })
      .int()
      .min(0)
      .max(16)
      .optional()
      .describe(
        'Replicas that must hold a claim before its action is sent (Redis WAIT), so a failover cannot lose it. Default: 1 with sentinels, or when the primary has replicas at startup; else 0.',
      ),
    replica_ack_timeout: duration({ min: MIN_PERIOD_MS })
      .prefault('1s')
      .describe(
        'How long a claim waits for its replicas; an action whose claim they did not confirm is deferred to the next pass.',
      ),
  })
  .superRefine((redis, ctx) => {
    const given = TOPOLOGIES.filter((key) => redis[key] !== undefined);
    if (given.length > 1) {
      ctx.addIssue({
        code: 'custom',
        path: [given[1]],
        message: `give exactly one of redis.url, redis.sentinels and redis.cluster (this file gives ${given.map((key) => `redis.${key}`).join(' and ')})`,
      });
    }
    if (redis.sentinels && !redis.master_name) {
      ctx.addIssue({
        code: 'custom',
        path: ['sentinels'],
        message: 'name the primary the sentinels monitor: add redis.master_name',
      });
    }
    for (const key of ['master_name', 'sentinel_password', 'sentinel_tls'] as const) {
      if (redis[key] !== undefined && !redis.sentinels)
        ctx.addIssue({ code: 'custom', path: [key], message: `redis.${key} applies only with redis.sentinels` });
    }
  })
  .transform((redis) => (redis.sentinels || redis.cluster || redis.url ? redis : { ...redis, url: DEFAULT_REDIS_URL }))
  .describe(
    'Queues, schedules, ledgers and the audit trail live here; replicas on one Redis act as one. One server (url), Sentinel (sentinels) or Cluster (cluster).',
  );

const httpSchema = z
  .strictObject({
    host: z.string().min(1).default('127.0.0.1'),
    port: z.number().int().min(0).max(65_535).default(9464).describe('0 turns the HTTP endpoints off.'),
    console_token: z
      .string({
        error: 'expected the token people give to open the console (write console_token: ${FORGEWARDEN_CONSOLE_TOKEN})',
      })
      .min(16, {
        error:
          'the console token must be at least 16 characters: it is all that keeps the pause switch from anyone who reaches the port',
      })
      .optional()
      .describe(
        'Once set, every console page (/, /policies, /audit) asks for it (a bearer header or the login form); on a host that is not loopback the console is off without it. Write it as "${VARIABLE}".',
      ),
  })
  .describe('Serves /healthz, /readyz, /metrics and the console.');

/** The HTTP server's own routes, which a webhook path must not shadow. */
function takenPath(path: string): boolean {
  const bare = path.length > 1 ? path.replace(/\/+$/, '') : path;
  if (
    [
      '/',
      '/healthz',
      '/readyz',
      '/metrics',
      '/audit',
      '/audit.ndjson',
      '/console.css',
      '/login',
      '/logout',
      '/policies',
    ].includes(bare)
  )
    return true;
  return bare.startsWith('/policies/') || bare.startsWith('/audit/');
}

const webhooksSchema = z
  .strictObject({
    enabled: z
      .boolean({ error: 'expected true or false' })
      .default(false)
      .describe("Whether the HTTP server takes the forge's webhooks."),
    secret_token: z
      .string({
        error: "expected the secret token the forge's hook sends (write secret_token: ${FORGEWARDEN_WEBHOOK_TOKEN})",
      })
      .min(16, {
        error:
          "the secret token must be at least 16 characters: it is all that tells the forge's deliveries from anyone else's",
      })
      .optional()
      .describe("Equals the secret token of the forge's hook (X-Gitlab-Token); required when enabled."),
    path: z
      .string()
      .regex(/^\/[A-Za-z0-9._~\-/]*$/, { error: 'expected a path such as /webhooks/gitlab' })
      .refine((path) => !takenPath(path), {
        error:
          'this path is taken by /healthz, /readyz, /metrics or the console (/, /audit, /policies/…, /login, /logout)',
      })
      .default('/webhooks/gitlab')
      .describe('Where the forge POSTs its deliveries, on the HTTP server.'),
  })
  .refine((webhooks) => !webhooks.enabled || webhooks.secret_token !== undefined, {
    path: ['secret_token'],
    error:
      'webhooks are enabled, so the secret token is required: without it anyone who can reach the port could make the daemon act',
  })
  .describe('Job and pipeline events from the forge, acted on within a second; polling stays on as the safety net.');

function policySchema(types: readonly PolicyTypeDefinition[]) {
  if (types.length === 0) {
    // No policy type is registered: every entry is an unknown type (a discriminated union needs at least one).
    return z.looseObject({ ...basePolicyShape, type: z.string() }).superRefine((entry, ctx) => {
      ctx.addIssue({ code: 'custom', path: ['type'], message: unknownTypeMessage(entry.type, types) });
    });
  }
  const [first, ...rest] = types.map((t) => t.schema);
  return z.discriminatedUnion('type', [first, ...rest], {
    error: (issue) => (issue.code === 'invalid_union' ? unknownTypeMessage(readType(issue.input), types) : undefined),
  });
}

function readType(input: unknown): unknown {
  return typeof input === 'object' && input !== null ? (input as Record<string, unknown>).type : undefined;
}

export function unknownTypeMessage(type: unknown, types: readonly PolicyTypeDefinition[]): string {
  const known = types.map((t) => t.type).join(', ') || 'none are installed';
  if (type === undefined) return `every policy needs a type; known types: ${known}`;
  if (typeof type === 'string') return `unknown policy type ${quote(type)}; known types: ${known}`;
  return `expected the name of a policy type, got ${describeValue(type)}; known types: ${known}`;
}

/** A `type` that is no name, by its kind: a whole mapping or list echoed into one message helps nobody. */
function describeValue(value: unknown): string {
  if (Array.isArray(value)) return 'a list';
  if (value === null) return 'nothing (null)';
  if (typeof value === 'object') return 'a mapping';
  return typeof value === 'number' || typeof value === 'boolean' ? String(value) : typeof value;
}

/** The `policies:` list, each entry by its type's schema. */
export function policiesSchema(types: readonly PolicyTypeDefinition[]) {
  return z.array(policySchema(types));
}

export function buildConfigSchema(types: readonly PolicyTypeDefinition[]) {
  return z
    .strictObject({
      version: z.literal(1, { error: 'expected version: 1 (the only version of the policy file so far)' }),
      gitlab: gitlabSchema,
      redis: redisSchema.prefault({}),
      dry_run: z
        .boolean()
        .default(true)
        .describe('The default: nothing changes on the forge until this is false. A policy may override it.'),
      http: httpSchema.prefault({}),
      webhooks: webhooksSchema.prefault({}),
      discovery_interval: duration()
        .prefault('10m')
        .refine((ms) => ms >= 60_000, { error: 'must be at least 1m: each refresh lists every matched group again' })
        .describe(
          'How often project globs (acme/**) are resolved again through the forge: a new project is covered within this time.',
        ),
      shutdown_timeout: duration()
        .prefault('30s')
        .describe('On SIGTERM/SIGINT, how long running work may take to finish before the daemon exits.'),
      // Unique names are checked by the loader: zod skips an array's refinements once an entry has a problem, and a
      // duplicate must be reported together with everything else.
      policies: policiesSchema(types).default([]),
    })
    .refine((config) => !(config.webhooks.enabled && config.http.port === 0), {
      path: ['webhooks', 'enabled'],
      error: 'webhooks are delivered to the HTTP server, which http.port: 0 turns off',
      when: (payload) => {
        const input = payload.value as { webhooks?: { enabled?: unknown }; http?: { port?: unknown } } | undefined;
        return input?.webhooks?.enabled === true && input.http?.port === 0;
      },
    });
}

type ConfigSchema = ReturnType<typeof buildConfigSchema>;

/** The validated configuration, with every default applied and durations in milliseconds. */
export type AppConfig = Omit<z.output<ConfigSchema>, 'policies'> & { policies: PolicyConfig[] };
export type GitlabConfig = AppConfig['gitlab'];
export type TokenRotationConfig = NonNullable<GitlabConfig['token_rotation']>;
export type RedisConfig = AppConfig['redis'];
export type HttpConfig = AppConfig['http'];
export type WebhooksConfig = AppConfig['webhooks'];

/** The JSON Schema of the written policy file, for YAML editors. */
export function configJsonSchema(types: readonly PolicyTypeDefinition[]): Record<string, unknown> {
  const schema = z.toJSONSchema(buildConfigSchema(types), { io: 'input', unrepresentable: 'any' });
  return {
    ...schema,
    title: 'Forgewarden policy file',
  };
}

import { protectSecrets } from '../bootstrap';
import type { AppConfig } from '../config/schema';
import { DaemonToken } from '../forge/daemon-token';
import { announceRetries, askForge, startClientRetry, startTimeoutMs, type ForgeStatus } from '../forge/forge-health';
import { expiryVerdict, readTokenExpiry } from '../forge/token-expiry';
import { TokenFileError } from '../forge/token-file';
import { tokenFileChecks } from '../forge/token-rotation';
import { EngineKeys } from '../engine/stores/keys';
import { OwnHarm } from '../engine/stores/own-harm';
import { PolicyPauses } from '../engine/stores/pauses';
import type { TargetProbe } from '../engine/policy';
import { ApiError, ForbiddenError, GitlabClient, NotFoundError, UnauthorizedError } from '../gitlab';
import { policyType } from '../policies';
import {
  describeRedis,
  redisKeyPrefix,
  redisTarget,
  type RedisTarget,
  RedisUnavailableError,
  waitForRedis,
} from '../redis/connection';
import { evictionPolicy, evictionRisk, SAFE_EVICTION_POLICY } from '../redis/eviction';
import { connectedReplicas, requiredReplicaAcks } from '../redis/replication';
import { serverOf } from '../redis/topology';
import { type CheckConnection, openCheckConnection, writeProblem } from '../redis/write-check';
import { formatDuration } from '../config/duration';
import { configPath, EXIT_INVALID_CONFIG, loadOrReport } from './config-file';

/** Redis gets this long at most: a doctor that waits the full connect timeout for a dead Redis feels hung. */
const REDIS_CHECK_MS = 5_000;

interface Check {
  readonly ok: boolean;
  readonly line: string;
  /** Works, but probably not as meant (a glob that matches no project): printed with `!`, not a failure. */
  readonly warning?: boolean;
}

/**
 * Checks what the daemon needs, one line per check, in plain words: the policy file, Redis (answers and takes
 * writes), the forge (answers), the token (accepted, whose, administrator or not), and for each policy whether its
 * targets exist and the token may work on them. Exit 1 when any check fails, 2 for an invalid file (as every command
 * says it, before contacting Redis or the forge). Nothing on the forge changes.
 */
export async function doctorCommand(options: { config?: string }): Promise<number> {
  const file = configPath(options.config);
  const config = loadOrReport(file);
  if (!config) {
    print({ ok: false, line: `policy file ${file}: invalid (the problems are listed above)` });
    return EXIT_INVALID_CONFIG;
  }
  protectSecrets(config);
  const checks: Check[] = [
    {
      ok: true,
      line: `policy file ${file}: valid, ${config.policies.length} polic${config.policies.length === 1 ? 'y' : 'ies'}`,
    },
  ];
  print(checks[0]);

  const redis = await checkRedis(config);
  for (const check of redis.checks) {
    checks.push(check);
    print(check);
  }

  const token = readToken(config);
  if (token instanceof TokenFileError) {
    checks.push({ ok: false, line: `token: ${token.message}` });
    print(checks[checks.length - 1]);
    redis.connection?.disconnect();
  } else {
    await forgeAndPolicyChecks(config, file, token, redis.connection, (check) => {
      checks.push(check);
      print(check);
    });
  }
  const failed = checks.filter((check) => !check.ok).length;
  process.stdout.write(failed === 0 ? 'all checks passed\n' : `${failed} check${failed === 1 ? '' : 's'} failed\n`);
  return failed === 0 ? 0 : 1;
}

/** The token the daemon would use: `gitlab.token`, or the token file's active token (or why it cannot be read). */
function readToken(config: AppConfig): DaemonToken | TokenFileError {
  try {
    return DaemonToken.of(config.gitlab);
  } catch (error) {
    if (error instanceof TokenFileError) return error;
    throw error;
  }
}

/** The forge, the token (accepted, whose, until when) and each policy's targets, each check handed to `report`. */
async function forgeAndPolicyChecks(
  config: AppConfig,
  file: string,
  token: DaemonToken,
  connection: CheckConnection | undefined,
  report: (check: Check) => void,
): Promise<void> {
  const client = new GitlabClient({
    url: config.gitlab.url,
    token,
    timeoutMs: config.gitlab.timeout,
    connectTimeoutMs: config.gitlab.connect_timeout,
    retry: startClientRetry(config),
    onRetry: announceRetries(config, say),
    ...(connection
      ? {
          redis: connection,
          redisPrefix: redisKeyPrefix(config.redis),
          maxRequestsPerMinute: config.gitlab.max_requests_per_minute,
        }
      : { maxRequestsPerMinute: 0 }),
  });
  try {
    const status = await askForge(client, config.gitlab.url, file, startTimeoutMs(config));
    forgeChecks(config, status).forEach(report);
    if (status.state === 'ok') {
      (await tokenChecks(client, token)).forEach(report);
      (await policyChecks(config, status.identity.administrator, client)).forEach(report);
    } else if (config.policies.length > 0) {
      report({ ok: false, line: `policies: not checked, ${NOT_CHECKED_BECAUSE[status.state]}` });
    }
  } finally {
    await client.close();
    connection?.disconnect();
  }
}

/** A wait, said at once beside the checks. */
function say(line: string): void {
  process.stderr.write(`forgewarden doctor: ${line}\n`);
}

function print(check: Check): void {
  process.stdout.write(`${check.ok ? (check.warning ? '!' : '✓') : '✗'} ${check.line}\n`);
}

/**
 * Redis answers, and takes a write and gives it back (a replica or a full disk refuses writes); then whether it may
 * evict the daemon's records.
 */
async function checkRedis(config: AppConfig): Promise<{ checks: Check[]; connection?: CheckConnection }> {
  let target: RedisTarget;
  try {
    target = redisTarget(config.redis);
    const timeoutMs = Math.min(config.redis.connect_timeout, REDIS_CHECK_MS);
    await waitForRedis(target, timeoutMs, {
      giveUpWhenRefused: true,
      onWait: say,
      bound: `doctor waits ${formatDuration(timeoutMs)} at most`,
    });
  } catch (error) {
    const reason =
      error instanceof RedisUnavailableError ? error.reason : error instanceof Error ? error.message : String(error);
    const setting = config.redis.sentinels ? 'redis.sentinels' : config.redis.cluster ? 'redis.cluster' : 'REDIS_URL';
    return {
      checks: [{ ok: false, line: `Redis at ${describeRedis(config.redis)} (${setting}): does not answer: ${reason}` }],
    };
  }
  const where = `Redis at ${target.where}`;
  const connection = openCheckConnection(target, REDIS_CHECK_MS);
  const markerKey = new EngineKeys(redisKeyPrefix(config.redis)).marker();
  const problem = await writeProblem(connection, `${markerKey}:doctor:${process.pid}`);
  if (problem !== undefined) return { checks: [{ ok: false, line: `${where}: ${problem}` }], connection };
  const checks: Check[] = [
    { ok: true, line: `${where}: answers and accepts writes` },
    await evictionCheck(connection, markerKey),
  ];
  const replicas = await replicaCheck(config, connection, markerKey);
  return {
    checks: [
      ...checks,
      ...(replicas ? [replicas] : []),
      ...(await pauseChecks(config, connection)),
      ...(await harmChecks(config, connection)),
    ],
    connection,
  };
}

/**
 * The bot's own harm a policy's last acting pass left open (a branch unprotected by a cut reprotect): a failure, since
 * it is a state nobody chose, mended first by every pass once the forge lets it.
 */
async function harmChecks(config: AppConfig, connection: CheckConnection): Promise<Check[]> {
  try {
    const open = await new OwnHarm(connection, config).all();
    return config.policies.flatMap((policy) =>
      (open.get(policy.name) ?? []).map((harm) => ({
        ok: false,
        line: `policy ${policy.name}: own harm open since ${harm.since}: ${harm.target}: ${harm.reason}; last repair ${harm.last}`,
      })),
    );
  } catch {
    return [];
  }
}

/**
 * The configured policies someone paused: no check fails for it (a pause is deliberate), but whoever wonders why a
 * policy does nothing reads it here.
 */
async function pauseChecks(config: AppConfig, connection: CheckConnection): Promise<Check[]> {
  try {
    const paused = await new PolicyPauses(connection, config).all();
    return config.policies.flatMap((policy) => {
      const pause = paused.get(policy.name);
      if (!pause) return [];
      const line = `policy ${policy.name}: paused since ${pause.since} by ${pause.by}: ${pause.reason}; it acts again after "forgewarden resume ${policy.name}"`;
      return [{ ok: true, warning: true, line }];
    });
  } catch {
    // Redis answered the checks above; a pause that cannot be read now is said by the daemon's console.
    return [];
  }
}

/**
 * Whether the replicas a claim waits for (redis.min_replicas_acked) are there: without them every action is deferred.
 * Nothing is said where no claim waits for a replica.
 */
async function replicaCheck(config: AppConfig, connection: CheckConnection, key: string): Promise<Check | undefined> {
  let connected: number;
  try {
    connected = await connectedReplicas(connection, key);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    const required = requiredReplicaAcks(config.redis, 0);
    return required === 0
      ? undefined
      : {
          ok: true,
          warning: true,
          line: `Redis replicas: not readable (INFO replication: ${reason}); a claim waits for ${required}`,
        };
  }
  const required = requiredReplicaAcks(config.redis, connected);
  if (required === 0) return undefined;
  const line = `Redis replicas: ${connected} connected; a claim waits for ${required} before its action is sent (redis.min_replicas_acked)`;
  return connected >= required
    ? { ok: true, line }
    : { ok: true, warning: true, line: `${line}: until then every action is deferred` };
}

/** Whether Redis may evict the daemon's records (see evictionRisk): a ✗ for any policy but noeviction. */
async function evictionCheck(connection: CheckConnection, key: string): Promise<Check> {
  let policy: string | undefined;
  try {
    policy = await evictionPolicy(await serverOf(connection, key));
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    return {
      ok: true,
      warning: true,
      line: `Redis maxmemory-policy: not readable (INFO memory: ${reason}); it must be ${SAFE_EVICTION_POLICY}`,
    };
  }
  if (policy === undefined)
    return {
      ok: true,
      warning: true,
      line: `Redis maxmemory-policy: not told by INFO memory; it must be ${SAFE_EVICTION_POLICY}`,
    };
  const risk = evictionRisk(policy);
  return risk ? { ok: false, line: `Redis ${risk}` } : { ok: true, line: `Redis maxmemory-policy: ${policy}` };
}

const NOT_CHECKED_BECAUSE = {
  unreachable: 'the forge did not answer',
  not_gitlab: 'the URL is not a GitLab API',
  refused: 'the forge refused the token',
} as const;

function forgeChecks(config: AppConfig, status: ForgeStatus): Check[] {
  const forge = `forge at ${config.gitlab.url}`;
  if (status.state === 'unreachable' || status.state === 'not_gitlab') {
    return [
      { ok: false, line: status.message },
      { ok: false, line: `token: not checked, ${NOT_CHECKED_BECAUSE[status.state]}` },
    ];
  }
  if (status.state === 'refused')
    return [
      { ok: true, line: `${forge}: answers` },
      { ok: false, line: `token: ${status.message}` },
    ];
  const who = `${status.identity.username}${status.identity.administrator ? ', an administrator' : ', not an administrator'}`;
  return [
    { ok: true, line: `${forge}: answers` },
    { ok: true, line: `token: accepted, user ${who}` },
  ];
}

/**
 * When the token stops working: a failure within 7 days, a warning within 30; and, for a rotating pair, what the
 * token file says of the rotation (an answer lost and not recovered yet is a failure: the bot's own harm).
 */
async function tokenChecks(client: GitlabClient, token: DaemonToken): Promise<Check[]> {
  const verdict = expiryVerdict(await readTokenExpiry(client), Date.now());
  const checks: Check[] = [
    { ok: verdict.level !== 'failure', warning: verdict.level === 'warning', line: `token: ${verdict.words}` },
  ];
  const state = token.fileState();
  if (state) checks.push(...tokenFileChecks(state, Date.now()));
  return checks;
}

/** Per policy: whether it needs an administrator the token is not, then each of its targets. */
async function policyChecks(config: AppConfig, administrator: boolean, client: GitlabClient): Promise<Check[]> {
  const checks: Check[] = [];
  for (const policy of config.policies) {
    const runner = policyType(policy.type);
    if (!runner) continue; // validation knows every type this build runs
    const needs = runner.needsAdministrator?.(policy);
    if (needs && !administrator)
      checks.push({ ok: false, line: `${policy.name}: needs an administrator's token: ${needs}` });
    for (const probe of runner.probes(policy)) checks.push(await runProbe(policy.name, probe, client));
  }
  return checks;
}

async function runProbe(policy: string, probe: TargetProbe, client: GitlabClient): Promise<Check> {
  const what = `${policy}: ${probe.target}`;
  try {
    const warning = await probe.read(client);
    return warning ? { ok: true, warning: true, line: `${what}: ${warning}` } : { ok: true, line: what };
  } catch (error) {
    return { ok: false, line: `${what}: ${probeFailure(error, probe)}` };
  }
}

function probeFailure(error: unknown, probe: TargetProbe): string {
  // The forge answers 404 both for what does not exist and for what the token may not see.
  if (error instanceof NotFoundError)
    return "not found, or the token cannot see it (check the path and that the token's user is a member)";
  if (error instanceof ForbiddenError) return `the token may not work on it: needs ${probe.needs}`;
  if (error instanceof UnauthorizedError) return 'the forge refused the token';
  if (error instanceof ApiError)
    return error.status === 0 ? `no answer: ${error.message}` : `the forge answered ${error.status}: ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}

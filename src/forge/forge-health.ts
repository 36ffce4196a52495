import { Inject, Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import { APP_CONFIG, CONFIG_FILE } from '../config/config.module';
import type { AppConfig } from '../config/schema';
import {
  ApiError,
  ForbiddenError,
  GitlabClient,
  isAdminView,
  NotFoundError,
  type RetryWait,
  UnauthorizedError,
} from '../gitlab';
import { formatDuration } from '../config/duration';
import { ANNOUNCE_AFTER_MS, gaveUpAfter, waitingLine } from '../logging/waiting';
import type { RetryOptions } from '../gitlab/transport/retry';
import { MetricsService } from '../metrics/metrics.service';
import { REDIS, type RedisConnection } from '../redis/redis.module';
import { redisKeyPrefix } from '../redis/connection';
import { EngineKeys } from '../engine/stores/keys';
import { THIS_REPLICA } from '../engine/stores/replicas';
import { DaemonToken } from './daemon-token';
import { expirySeconds, readTokenExpiry, type TokenExpiry } from './token-expiry';

/** Who the token is, as `GET /user` says. */
export interface TokenIdentity {
  readonly userId: number;
  readonly username: string;
  /** When the token's user was made: with the id, it tells one forge's user from another's that shares the id. */
  readonly userCreatedAt: string;
  readonly administrator: boolean;
}

/**
 * What the last look at the forge found: it accepted the token; it refused the token (401, or 403 for a token without
 * the `api`/`read_user` scope) or is no GitLab API at all (404 on `GET /api/v4/user`), which no waiting mends; or it
 * could not be asked (down, unreachable, answering 429 or 5xx).
 */
export type ForgeStatus =
  | { readonly state: 'ok'; readonly identity: TokenIdentity }
  | { readonly state: 'refused'; readonly message: string }
  | { readonly state: 'not_gitlab'; readonly message: string }
  | { readonly state: 'unreachable'; readonly message: string };

/** What the last look at the forge found, as every replica's console reads it from Redis. */
export interface SharedForgeStatus {
  readonly state: ForgeStatus['state'];
  readonly username?: string;
  readonly administrator?: boolean;
  readonly message?: string;
  readonly version?: string;
  /** The token's expiry day, or null when it never expires; absent when unknown (see `token_expiry_unknown`). */
  readonly token_expires_at?: string | null;
  readonly token_expiry_unknown?: string;
  /** A rotation of the daemon's own token was sent and its answer is not written yet (see token-rotation.ts). */
  readonly token_rotation_pending?: boolean;
  /** ISO 8601. */
  readonly checked_at: string;
  readonly replica: string;
}

/** Kept for ten minutes: a status no daemon has renewed for that long says nothing of the forge now. */
const SHARED_STATUS_TTL_S = 600;

/** How often a running daemon looks at the forge again: `forgewarden_forge_up` and `/readyz` are this fresh. */
export const FORGE_CHECK_MS = 30_000;
/** While the forge does not answer, it is asked more often, so the daemon is ready again soon after it does. */
export const FORGE_RECHECK_MS = 5_000;

/**
 * The forge's health as the daemon sees it: `GET /user` with the token, at start and every 30 s while the daemon
 * runs. The watch's client tries once (no retries, no backoff), so `/readyz` follows the forge within seconds; a
 * command's first look retries passing faults within `gitlab.start_timeout`. Both spend the shared budget.
 */
@Injectable()
export class ForgeHealth implements OnModuleDestroy {
  private readonly logger = new Logger('Forge');
  private readonly client: GitlabClient;
  /** The first look's client: it waits out what the forge's retry layer waits out, within `gitlab.start_timeout`. */
  private readonly startClient: GitlabClient;
  private last: ForgeStatus | undefined;
  private timer: NodeJS.Timeout | undefined;
  private watching = false;
  private identified: Array<(identity: TokenIdentity) => void> = [];
  /** The forge's version, asked once the token is accepted (it does not change while the daemon runs, mostly). */
  private version: string | undefined;
  /** The token's expiry as last read, and which token value it was read for (a rotated token is read again). */
  private expiry: { readonly of: string; readonly atMs: number; readonly value: TokenExpiry } | undefined;
  /** Who hears of the first look's waits, while it lasts. */
  private startWait: ((event: RetryWait) => void) | undefined;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(CONFIG_FILE) private readonly configFile: string,
    @Inject(REDIS) private readonly redis: RedisConnection,
    private readonly metrics: MetricsService,
    private readonly token: DaemonToken,
  ) {
    const client = (retry: Partial<RetryOptions>, onRetry?: (event: RetryWait) => void) =>
      new GitlabClient({
        url: config.gitlab.url,
        token,
        timeoutMs: config.gitlab.timeout,
        connectTimeoutMs: config.gitlab.connect_timeout,
        maxRequestsPerMinute: config.gitlab.max_requests_per_minute,
        redis,
        redisPrefix: redisKeyPrefix(config.redis),
        retry,
        onRetry,
        onResponse: ({ method, route, status, durationMs }) => {
          metrics.apiRequests.inc({ method, status: String(status) });
          metrics.apiRequestDuration.observe({ method, route }, durationMs / 1000);
        },
      });
    this.client = client(oneShotClientRetry());
    this.startClient = client(startClientRetry(config), (event) => this.startWait?.(event));
  }

  async onModuleDestroy(): Promise<void> {
    this.stopWatching();
    await Promise.all([this.client.close(), this.startClient.close()]);
  }

  /** The last status, or undefined before the first check. */
  status(): ForgeStatus | undefined {
    return this.last;
  }

  /** The token's expiry as last read by the daemon's watch; undefined before it was. */
  tokenExpiry(): TokenExpiry | undefined {
    return this.expiry?.value;
  }

  /**
   * A command's first look: like `check`, but a 429, a 5xx or a failed connection is tried again as the client's retry
   * layer does (honouring `Retry-After`) until `gitlab.start_timeout` has passed, so a passing fault does not end a
   * cron-driven `once`. Only a refused token, a URL that is no GitLab API, or that bound run out ends the command.
   * The first wait is said at once through `onWait`.
   */
  async checkAtStart(onWait?: (line: string) => void): Promise<ForgeStatus> {
    this.startWait = onWait && announceRetries(this.config, onWait);
    try {
      return await this.look(this.startClient, startTimeoutMs(this.config), false);
    } finally {
      this.startWait = undefined;
    }
  }

  /** Asks the forge once who the token is and sets `forgewarden_forge_up`; the caller says what the answer means. */
  check(): Promise<ForgeStatus> {
    return this.look(this.client, undefined, true);
  }

  /** `share`: the daemon's looks only, for the console; a command's look leaves Redis as it found it. */
  private async look(client: GitlabClient, retriedForMs: number | undefined, share: boolean): Promise<ForgeStatus> {
    const status = await askForge(client, this.config.gitlab.url, this.configFile, retriedForMs);
    this.metrics.forgeUp.set(status.state === 'ok' ? 1 : 0);
    this.last = status;
    // Not awaited: what the console shows must never hold up a command or the readiness check.
    if (share) void this.share(status);
    if (status.state === 'ok') {
      const listeners = this.identified;
      this.identified = [];
      for (const listener of listeners) listener(status.identity);
    }
    return status;
  }

  /**
   * The status in Redis, for the console every replica serves alike: up or why not, the forge's version and the
   * token's user (never the token). Kept from failing the check: Redis away is `/readyz`'s news, not the forge's.
   */
  private async share(status: ForgeStatus): Promise<void> {
    try {
      // Asked once, by the client that tries once: a forge that hides its version is not waited on.
      if (status.state === 'ok' && this.version === undefined)
        this.version = (await this.client.version.show()).version;
    } catch {
      // An older forge, or one that hides its version: the console says it is unknown.
    }
    const expiry = this.expiry?.value;
    const shared: SharedForgeStatus = {
      state: status.state,
      ...(status.state === 'ok'
        ? { username: status.identity.username, administrator: status.identity.administrator }
        : { message: status.message }),
      ...(this.version !== undefined ? { version: this.version } : {}),
      ...(expiry?.state === 'expires'
        ? { token_expires_at: expiry.date }
        : expiry?.state === 'never'
          ? { token_expires_at: null }
          : {}),
      ...(expiry?.state === 'unknown' ? { token_expiry_unknown: expiry.reason } : {}),
      ...(this.token.fileState()?.pending ? { token_rotation_pending: true } : {}),
      checked_at: new Date().toISOString(),
      replica: THIS_REPLICA,
    };
    await this.redis
      .set(EngineKeys.of(this.config).forgeStatus(), JSON.stringify(shared), 'EX', SHARED_STATUS_TTL_S)
      .catch(() => undefined);
  }

  /** What the last look at the forge found, by whichever replica looked last; undefined when none did lately. */
  async shared(): Promise<SharedForgeStatus | undefined> {
    const text = await this.redis.get(EngineKeys.of(this.config).forgeStatus());
    if (text === null) return undefined;
    try {
      return JSON.parse(text) as SharedForgeStatus;
    } catch {
      return undefined;
    }
  }

  /** Calls `listener` once, at the first check that finds the forge accepting the token (a daemon started while it was away). */
  onceIdentified(listener: (identity: TokenIdentity) => void): void {
    this.identified.push(listener);
  }

  /**
   * The daemon's watch: a check every 30 s, so `/readyz` and the metric follow the forge; each change of state is
   * logged once (an error when the forge goes away or starts refusing the token, info when it answers again).
   */
  watch(): void {
    this.stopWatching();
    this.watching = true;
    this.scheduleCheck();
    void this.readExpiryWhenDue();
  }

  stopWatching(): void {
    this.watching = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /**
   * `forgewarden_token_expires_at_seconds{token="active"}`: read at the watch's start, every 10 minutes and whenever the
   * token changed (the daemon's own rotation says so at once); absent while the token never expires or cannot read its
   * own record. Never fails the watch.
   */
  async readExpiryWhenDue(): Promise<void> {
    const of = this.token.current();
    const now = Date.now();
    if (this.expiry && this.expiry.of === of && now - this.expiry.atMs < EXPIRY_READ_MS) return;
    const value = await readTokenExpiry(this.client);
    // A passing failure to read keeps what was known of this very token.
    if (value.state === 'unknown' && value.passing && this.expiry?.of === of && this.expiry.value.state !== 'unknown')
      return;
    this.expiry = { of, atMs: now, value };
    if (value.state === 'expires') this.metrics.tokenExpiresAt.set({ token: 'active' }, expirySeconds(value.date));
    else this.metrics.tokenExpiresAt.remove({ token: 'active' });
    // The console reads the status every replica shares: it learns the expiry now, not at the next look.
    if (this.last) await this.share(this.last);
  }

  private scheduleCheck(): void {
    if (!this.watching) return;
    this.timer = setTimeout(
      () => void this.checkAndTell().finally(() => this.scheduleCheck()),
      this.last?.state === 'ok' ? FORGE_CHECK_MS : FORGE_RECHECK_MS,
    );
    this.timer.unref();
  }

  private async checkAndTell(): Promise<void> {
    const previous = this.last?.state;
    const status = await this.check();
    if (status.state === 'ok') await this.readExpiryWhenDue();
    if (status.state === previous) return;
    if (status.state === 'ok')
      this.logger.log(`the forge at ${this.config.gitlab.url} answers and accepts the token again`);
    else this.logger.error(`${status.message}; /readyz answers 503 until it does`);
  }
}

/** How often the daemon reads its token's expiry again, besides whenever the token itself changed. */
const EXPIRY_READ_MS = 10 * 60_000;

/**
 * `GET /user` with the token: who it is, or why the forge cannot be used. The messages name the settings to fix
 * (GITLAB_URL, GITLAB_TOKEN and where the file reads them), never the token itself. `retriedForMs`, for a client that
 * retries, is its bound: a forge still unanswering is said to be so after that long.
 */
export async function askForge(
  client: GitlabClient,
  url: string,
  configFile: string,
  retriedForMs?: number,
): Promise<ForgeStatus> {
  const started = performance.now();
  try {
    const me = await client.users.current();
    return {
      state: 'ok',
      identity: {
        userId: me.id,
        username: me.username,
        userCreatedAt: String(me.created_at ?? 'unknown'),
        administrator: isAdminView(me) && me.is_admin === true,
      },
    };
  } catch (error) {
    if (error instanceof UnauthorizedError) {
      return {
        state: 'refused',
        message: `the forge at ${url} refused the token (401 Unauthorized): check GITLAB_TOKEN (gitlab.token in ${configFile}) and that GITLAB_URL (gitlab.url) is the forge it belongs to`,
      };
    }
    if (error instanceof ForbiddenError && /blocked|deactivated|locked/i.test(error.message)) {
      // The forge answers a blocked account's every request with 403: no scope mends that, an administrator does.
      return {
        state: 'refused',
        message: `the forge at ${url} refused the token (403 Forbidden: ${error.message}): the token's user is blocked; an administrator must unblock it`,
      };
    }
    if (error instanceof ForbiddenError) {
      return {
        state: 'refused',
        message: `the forge at ${url} refused the token (403 Forbidden: ${error.message}): GITLAB_TOKEN needs the api scope`,
      };
    }
    if (error instanceof NotFoundError) {
      // A web server that is not the forge, or the forge under another path: no waiting mends that.
      return {
        state: 'not_gitlab',
        message: `${url} does not look like a GitLab API (GET /api/v4/user answered 404): check GITLAB_URL (gitlab.url in ${configFile})`,
      };
    }
    const bound =
      retriedForMs === undefined
        ? ''
        : `; ${gaveUpAfter(performance.now() - started, `gitlab.start_timeout ${formatDuration(retriedForMs)}`)}`;
    if (error instanceof ApiError && error.status !== 0) {
      return {
        state: 'unreachable',
        message: `the forge at ${url} (GITLAB_URL) cannot answer now: ${error.status} ${error.message}${bound}`,
      };
    }
    return {
      state: 'unreachable',
      message: `cannot reach the forge at ${url} (GITLAB_URL): ${error instanceof Error ? error.message : String(error)}${bound}`,
    };
  }
}

/**
 * The first wait of a command's first look at the forge, said once as it starts (what, why, until when): the client
 * retries a forge that does not answer for up to `gitlab.start_timeout`, silently otherwise.
 */
export function announceRetries(config: AppConfig, onWait: (line: string) => void): (event: RetryWait) => void {
  const boundMs = startTimeoutMs(config);
  const deadline = Date.now() + boundMs;
  let announced = false;
  return ({ error }) => {
    if (announced || deadline - Date.now() <= ANNOUNCE_AFTER_MS) return;
    announced = true;
    const why = error.status === 0 ? error.message : `it answers ${error.status} ${error.message}`;
    onWait(
      waitingLine(
        `the forge at ${config.gitlab.url} (GITLAB_URL)`,
        why,
        deadline,
        `gitlab.start_timeout ${formatDuration(boundMs)}`,
      ),
    );
  };
}

/** What tells this forge from another for the records in Redis (see RecordsOwner): its URL and the token's user. */
export function forgeFingerprint(
  config: AppConfig,
  identity: TokenIdentity,
): { url: string; userId: number; userCreatedAt: string } {
  return { url: config.gitlab.url, userId: identity.userId, userCreatedAt: identity.userCreatedAt };
}

/** The options of a client that asks once: the daemon's watch must answer in seconds, not after the retry layer's backoff. */
export function oneShotClientRetry(): Partial<RetryOptions> {
  return { maxAttempts: 1 };
}

/** `gitlab.start_timeout`, else `gitlab.timeout`. */
export function startTimeoutMs(config: AppConfig): number {
  return config.gitlab.start_timeout ?? config.gitlab.timeout;
}

/** The options of a command's first look: retries as the client's, for as long as `gitlab.start_timeout` allows. */
export function startClientRetry(config: AppConfig): Partial<RetryOptions> {
  return { maxAttempts: Number.MAX_SAFE_INTEGER, deadlineMs: startTimeoutMs(config) };
}

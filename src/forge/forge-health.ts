import { Inject, Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import { APP_CONFIG, CONFIG_FILE } from '../config/config.module';
import type { AppConfig } from '../config/schema';
import { ApiError, ForbiddenError, GitlabClient, isAdminView, UnauthorizedError } from '../gitlab';
import { MetricsService } from '../metrics/metrics.service';
import { REDIS, type RedisConnection } from '../redis/redis.module';

/** Who the token is, as `GET /user` says. */
export interface TokenIdentity {
  readonly username: string;
  readonly administrator: boolean;
}

/**
 * What the last look at the forge found: it accepted the token; it refused the token (401, or 403 for a token without
 * the `api`/`read_user` scope), which no waiting mends; or it could not be asked (down, unreachable, answering 5xx).
 */
export type ForgeStatus =
  | { readonly state: 'ok'; readonly identity: TokenIdentity }
  | { readonly state: 'refused'; readonly message: string }
  | { readonly state: 'unreachable'; readonly message: string };

/** How often a running daemon looks at the forge again: `forgewarden_forge_up` and `/readyz` are this fresh. */
export const FORGE_CHECK_MS = 30_000;
/** While the forge does not answer, it is asked more often, so the daemon is ready again soon after it does. */
export const FORGE_RECHECK_MS = 5_000;

/**
 * The forge's health as the daemon sees it: `GET /user` with the token, at start and every 30 s while the daemon
 * runs. It has a client of its own that tries once (no retries, no backoff), so a start with a wrong token ends in
 * seconds and an unreachable forge is reported within `gitlab.connect_timeout`; it still spends the shared budget.
 */
@Injectable()
export class ForgeHealth implements OnModuleDestroy {
  private readonly logger = new Logger('Forge');
  private readonly client: GitlabClient;
  private last: ForgeStatus | undefined;
  private timer: NodeJS.Timeout | undefined;
  private watching = false;
  private identified: Array<(identity: TokenIdentity) => void> = [];

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(CONFIG_FILE) private readonly configFile: string,
    @Inject(REDIS) redis: RedisConnection,
    private readonly metrics: MetricsService,
  ) {
    this.client = new GitlabClient({
      url: config.gitlab.url,
      token: config.gitlab.token,
      timeoutMs: config.gitlab.timeout,
      connectTimeoutMs: config.gitlab.connect_timeout,
      maxRequestsPerMinute: config.gitlab.max_requests_per_minute,
      redis,
      redisPrefix: config.redis.prefix,
      retry: oneShotClientRetry(),
      onResponse: ({ method, route, status, durationMs }) => {
        metrics.apiRequests.inc({ method, status: String(status) });
        metrics.apiRequestDuration.observe({ method, route }, durationMs / 1000);
      },
    });
  }

  async onModuleDestroy(): Promise<void> {
    this.stopWatching();
    await this.client.close();
  }

  /** The last status, or undefined before the first check. */
  status(): ForgeStatus | undefined {
    return this.last;
  }

  /** Asks the forge who the token is and sets `forgewarden_forge_up`; the caller says what the answer means. */
  async check(): Promise<ForgeStatus> {
    const status = await this.ask();
    this.metrics.forgeUp.set(status.state === 'ok' ? 1 : 0);
    this.last = status;
    if (status.state === 'ok') {
      const listeners = this.identified;
      this.identified = [];
      for (const listener of listeners) listener(status.identity);
    }
    return status;
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
  }

  stopWatching(): void {
    this.watching = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private scheduleCheck(): void {
    if (!this.watching) return;
    this.timer = setTimeout(() => void this.checkAndTell().finally(() => this.scheduleCheck()), this.last?.state === 'ok' ? FORGE_CHECK_MS : FORGE_RECHECK_MS);
    this.timer.unref();
  }

  private async checkAndTell(): Promise<void> {
    const previous = this.last?.state;
    const status = await this.check();
    if (status.state === previous) return;
    if (status.state === 'ok') this.logger.log(`the forge at ${this.config.gitlab.url} answers and accepts the token again`);
    else this.logger.error(`${status.message}; /readyz answers 503 until it does`);
  }

  private ask(): Promise<ForgeStatus> {
    return askForge(this.client, this.config.gitlab.url, this.configFile);
  }
}

/**
 * `GET /user` with the token: who it is, or why the forge cannot be used. The messages name the settings to fix
 * (GITLAB_URL, GITLAB_TOKEN and where the file reads them), never the token itself.
 */
export async function askForge(client: GitlabClient, url: string, configFile: string): Promise<ForgeStatus> {
  try {
    const me = await client.users.current();
    return { state: 'ok', identity: { username: me.username, administrator: isAdminView(me) && me.is_admin === true } };
  } catch (error) {
    if (error instanceof UnauthorizedError) {
      return {
        state: 'refused',
        message: `the forge at ${url} refused the token (401 Unauthorized): check GITLAB_TOKEN (gitlab.token in ${configFile}) and that GITLAB_URL (gitlab.url) is the forge it belongs to`,
      };
    }
    if (error instanceof ForbiddenError) {
      return { state: 'refused', message: `the forge at ${url} refused the token (403 Forbidden: ${error.message}): GITLAB_TOKEN needs the api scope` };
    }
    if (error instanceof ApiError && error.status !== 0) {
      return { state: 'unreachable', message: `the forge at ${url} (GITLAB_URL) cannot answer now: ${error.status} ${error.message}` };
    }
    return { state: 'unreachable', message: `cannot reach the forge at ${url} (GITLAB_URL): ${error instanceof Error ? error.message : String(error)}` };
  }
}

/** The options of a client that asks once: a check must answer in seconds, not after the retry layer's backoff. */
export function oneShotClientRetry(): { maxAttempts: number } {
  return { maxAttempts: 1 };
}

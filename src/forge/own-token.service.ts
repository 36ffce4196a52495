import { Inject, Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import { systemClock } from '../clock';
import { APP_CONFIG } from '../config/config.module';
import type { AppConfig } from '../config/schema';
import { THIS_REPLICA } from '../engine/stores/replicas';
import { TokenFileReaders } from '../engine/stores/token-file-readers';
import { GitlabClient } from '../gitlab';
import { MetricsService } from '../metrics/metrics.service';
import { redisKeyPrefix } from '../redis/connection';
import { REDIS, type RedisConnection } from '../redis/redis.module';
import { DaemonToken } from './daemon-token';
import { ForgeHealth } from './forge-health';
import { expirySeconds } from './token-expiry';
import { type RotationOutcome, TokenRotation } from './token-rotation';

/** How often every replica reads the token file again and says which generation it holds. */
export const TOKEN_FILE_READ_MS = 30_000;
/** How often the rotation looks whether a token of the pair is due (cheap when none is: no request). */
export const TOKEN_ROTATION_RUN_MS = 5 * 60_000;

/**
 * The daemon's watch over its own token file: every replica reads it every 30 s (another may have rotated the pair)
 * and says so in Redis; with `gitlab.token_rotation`, one replica at a time rotates the pair when it is due.
 * `forgewarden_token_rotation_pending` and the spare's expiry follow the file.
 */
@Injectable()
export class OwnTokenService implements OnModuleDestroy {
  private readonly logger = new Logger('Token');
  private readonly readers: TokenFileReaders;
  private readonly rotation: TokenRotation | undefined;
  private readTimer: NodeJS.Timeout | undefined;
  private rotateTimer: NodeJS.Timeout | undefined;
  private rotating: Promise<unknown> | undefined;
  private lastWords: string | undefined;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(REDIS) private readonly redis: RedisConnection,
    private readonly token: DaemonToken,
    client: GitlabClient,
    private readonly metrics: MetricsService,
    private readonly health: ForgeHealth,
  ) {
    this.readers = new TokenFileReaders(redis, redisKeyPrefix(config.redis));
    const rotation = config.gitlab.token_rotation;
    if (rotation && token.file) {
      this.rotation = new TokenRotation({
        client,
        token,
        readers: this.readers,
        rotation,
        replica: THIS_REPLICA,
        clock: systemClock,
        selfOf: (value) => this.selfOf(value),
        leaseMs: Math.max(60_000, 4 * config.gitlab.timeout),
      });
    }
  }

  /** Starts the watch (the daemon only: one-shot commands read the file once, at start). */
  start(): void {
    if (!this.token.file) return;
    this.stop();
    this.readTimer = setInterval(() => void this.read(), TOKEN_FILE_READ_MS);
    this.readTimer.unref();
    void this.read();
    if (!this.rotation) return;
    this.rotateTimer = setInterval(() => void this.rotate(), TOKEN_ROTATION_RUN_MS);
    this.rotateTimer.unref();
    void this.rotate();
  }

  stop(): void {
    if (this.readTimer) clearInterval(this.readTimer);
    if (this.rotateTimer) clearInterval(this.rotateTimer);
    this.readTimer = undefined;
    this.rotateTimer = undefined;
  }

  async onModuleDestroy(): Promise<void> {
    this.stop();
    // A rotation in flight finishes its write before the process goes: its value must reach the file.
    await this.rotating;
  }

  /** One run of the rotation, now (also what the timer does); never throws. */
  async rotate(): Promise<RotationOutcome | undefined> {
    if (!this.rotation || this.rotating) return undefined;
    const run = this.rotation.run().catch((error: unknown): RotationOutcome => ({
      result: 'failed',
      words: error instanceof Error ? error.message : String(error),
    }));
    this.rotating = run;
    try {
      const outcome = await run;
      this.tell(outcome);
      // Requests carry another token now: its expiry is read at once, for the gauge and the console.
      if (outcome.result === 'rotated' || outcome.result === 'recovered') await this.health.readExpiryWhenDue();
      return outcome;
    } finally {
      this.rotating = undefined;
      this.measure();
    }
  }

  private async read(): Promise<void> {
    try {
      const before = this.token.current();
      await this.token.reload();
      if (this.token.current() !== before) await this.health.readExpiryWhenDue();
      const state = this.token.fileState();
      if (state) await this.readers.say(THIS_REPLICA, state.generation, Date.now());
    } catch (error) {
      this.logger.error(`${error instanceof Error ? error.message : String(error)}; the token read last is kept`);
    }
    this.measure();
  }

  /** Each outcome once while it lasts: a rotation waiting on a replica is said when it starts waiting, not every run. */
  private tell(outcome: RotationOutcome): void {
    if (outcome.words === this.lastWords && outcome.result !== 'rotated' && outcome.result !== 'recovered') return;
    this.lastWords = outcome.words;
    if (outcome.result === 'rotated' || outcome.result === 'recovered') this.logger.log(outcome.words);
    else if (outcome.result === 'waiting') this.logger.warn(outcome.words);
    else if (outcome.result !== 'not_due') this.logger.error(outcome.words);
  }

  private measure(): void {
    const state = this.token.fileState();
    if (!state) return;
    this.metrics.tokenRotationPending.set(state.pending ? 1 : 0);
    const spare = state.tokens.find((_, index) => index !== state.active);
    if (spare?.expires_at && spare.lost === null)
      this.metrics.tokenExpiresAt.set({ token: 'spare' }, expirySeconds(spare.expires_at));
    else this.metrics.tokenExpiresAt.remove({ token: 'spare' });
  }

  /** A token's own record, asked with that token once (a value an operator wrote, before the daemon knows its id). */
  private async selfOf(value: string) {
    const client = new GitlabClient({
      url: this.config.gitlab.url,
      token: value,
      timeoutMs: this.config.gitlab.timeout,
      connectTimeoutMs: this.config.gitlab.connect_timeout,
      redis: this.redis,
      redisPrefix: redisKeyPrefix(this.config.redis),
      maxRequestsPerMinute: this.config.gitlab.max_requests_per_minute,
      retry: { maxAttempts: 1 },
    });
    try {
      return await client.personalAccessTokens.self();
    } finally {
      await client.close();
    }
  }
}

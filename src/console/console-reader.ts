import { Inject, Injectable } from '@nestjs/common';
import { CLOCK, type Clock } from '../clock';
import { APP_CONFIG } from '../config/config.module';
import { formatDuration } from '../config/duration';
import { writtenPolicy } from '../config/load';
import type { PolicyConfig } from '../config/policy-type';
import type { AppConfig } from '../config/schema';
import { ActiveConfig } from '../engine/active-config';
import type { Trigger, UnsettledTarget } from '../engine/policy';
import { type AuditFilter, type AuditPage, AuditTrail, type StoredAuditEntry } from '../engine/stores/audit';
import { type OpenHarm, OwnHarm } from '../engine/stores/own-harm';
import { type PassEntry, PassLog } from '../engine/stores/pass-log';
import { type Pause, PolicyPauses } from '../engine/stores/pauses';
import { measureNotices } from '../engine/stores/policy-measures';
import { ReplicaPresence, type ReplicaSeen, RUNNING_IF_SEEN_MS } from '../engine/stores/replicas';
import { UnsettledTargets } from '../engine/stores/unsettled';
import { nextTriggerRun } from '../engine/trigger-period';
import { ForgeHealth, type SharedForgeStatus } from '../forge/forge-health';
import { sharedBudgetUsed } from '../gitlab';
import { redactor } from '../logging/redact';
import { describeRedis, redisKeyPrefix } from '../redis/connection';
import { REDIS, RedisHealth, type RedisConnection } from '../redis/redis.module';

/** Entries one audit page shows. */
export const AUDIT_PAGE_SIZE = 50;
/** Entries a filtered page reads through at most before it says where it stopped. */
export const AUDIT_SCAN_LIMIT = 10_000;

/** One policy's row of the overview. */
export interface PolicyRow {
  readonly name: string;
  readonly type: string;
  readonly trigger: string;
  readonly dryRun: boolean;
  readonly pause?: Pause;
  readonly last?: PassEntry;
  /** When the next pass is due: the trigger's next run, or sooner when the last pass asked for it. */
  readonly nextPass?: Date;
  readonly unsettled: number;
  /** What the policy's flagging measures say now (a backup set running past the next), see PolicyMeasure.notice. */
  readonly notices: readonly string[];
  /** The bot's own harm its last acting pass left open (see OwnHarm): said above everything else. */
  readonly harm: readonly OpenHarm[];
}

export interface Overview {
  readonly now: Date;
  readonly policies: readonly PolicyRow[];
  readonly forge?: SharedForgeStatus;
  readonly forgeUrl: string;
  readonly redis: { readonly where: string; readonly answers: boolean };
  readonly budget: { readonly used: number; readonly limit: number };
  readonly replicas: readonly ReplicaSeen[];
}

export interface PolicyDetail {
  readonly row: PolicyRow;
  /** The policy's settings as loaded, secrets replaced by `(secret)`. */
  readonly settings: Record<string, unknown>;
  readonly passes: readonly PassEntry[];
  readonly unsettled: ReadonlyArray<UnsettledTarget & { readonly lookedAtAgain?: Date }>;
  readonly recent: AuditPage;
}

/**
 * What the console shows, read from Redis (and the loaded file) on each request: every replica serves the same
 * picture, whichever ran the passes. Nothing here reads the forge; the explain page does, through the engine.
 */
@Injectable()
export class ConsoleReader {
  constructor(
    private readonly active: ActiveConfig,
    private readonly passLog: PassLog,
    private readonly pauses: PolicyPauses,
    private readonly unsettled: UnsettledTargets,
    private readonly ownHarm: OwnHarm,
    private readonly audit: AuditTrail,
    private readonly replicas: ReplicaPresence,
    private readonly forge: ForgeHealth,
    private readonly redisHealth: RedisHealth,
    @Inject(REDIS) private readonly redis: RedisConnection,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  async overview(): Promise<Overview> {
    const now = new Date(this.clock.now());
    const policies = this.active.policies;
    const [rows, forge, answers, used, replicas] = await Promise.all([
      this.rows(policies, now),
      this.forge.shared(),
      this.redisHealth.answers(),
      sharedBudgetUsed(this.redis, redisKeyPrefix(this.config.redis), Date.now()).catch(() => 0),
      this.replicas.seenSince(Date.now() - RUNNING_IF_SEEN_MS, Date.now()),
    ]);
    return {
      now,
      policies: rows,
      ...(forge ? { forge } : {}),
      forgeUrl: this.config.gitlab.url,
      redis: { where: describeRedis(this.config.redis), answers },
      budget: { used, limit: this.config.gitlab.max_requests_per_minute },
      replicas,
    };
  }

  /** The policy's page, or undefined when no policy of that name is configured. */
  async policy(name: string): Promise<PolicyDetail | undefined> {
    const policy = this.active.find(name);
    if (!policy) return undefined;
    const now = new Date(this.clock.now());
    const [[row], passes, open, recent] = await Promise.all([
      this.rows([policy], now),
      this.passLog.recent(name),
      this.unsettled.read(name),
      this.audit.page({ policy: name }, { limit: 20, scanLimit: AUDIT_SCAN_LIMIT }),
    ]);
    const unsettled = open.map((target) => {
      // A parked target waits out its refusal's backoff; any other is taken up by the next pass (not while paused).
      const retry = target.refusal ? new Date(target.refusal.retry_at) : row.pause ? undefined : row.nextPass;
      return { ...target, ...(retry ? { lookedAtAgain: retry } : {}) };
    });
    return { row: row, settings: this.settingsOf(policy), passes, unsettled, recent };
  }

  auditPage(filter: AuditFilter, before: string | undefined, limit = AUDIT_PAGE_SIZE): Promise<AuditPage> {
    return this.audit.page(filter, { limit, scanLimit: AUDIT_SCAN_LIMIT, ...(before !== undefined ? { before } : {}) });
  }

  auditEntry(id: string): Promise<StoredAuditEntry | undefined> {
    return this.audit.entry(id);
  }

  /** The configured policies' names, for the audit page's filter. */
  policyNames(): string[] {
    return this.active.names();
  }

  private async rows(policies: readonly PolicyConfig[], now: Date): Promise<PolicyRow[]> {
    const names = policies.map((policy) => policy.name);
    const measuresOf = (name: string) => {
      const policy = this.active.find(name);
      return policy ? this.active.typeOf(policy).measures : undefined;
    };
    const [last, paused, sizes, notices, harm] = await Promise.all([
      this.passLog.latest(names),
      this.pauses.all(),
      this.unsettled.sizes(names),
      measureNotices(this.redis, this.config, measuresOf),
      this.ownHarm.all(),
    ]);
    return policies.map((policy) => {
      const trigger = this.active.typeOf(policy).trigger(policy);
      const entry = last.get(policy.name);
      const pause = paused.get(policy.name);
      const asked = entry?.next_pass !== undefined ? new Date(entry.next_pass) : undefined;
      const scheduled = nextTriggerRun(trigger, now);
      const nextPass = asked && asked > now && (!scheduled || asked < scheduled) ? asked : scheduled;
      return {
        name: policy.name,
        type: policy.type,
        trigger: describeTrigger(trigger),
        dryRun: this.active.dryRun(policy),
        ...(pause ? { pause } : {}),
        ...(entry ? { last: entry } : {}),
        ...(nextPass ? { nextPass } : {}),
        unsettled: sizes.get(policy.name) ?? 0,
        notices: notices.get(policy.name) ?? [],
        harm: harm.get(policy.name) ?? [],
      };
    });
  }

  /**
   * The settings as the file that is running wrote them (defaults are the documented ones), with every secret the
   * policy holds, or the daemon was given, shown as `(secret)`.
   */
  private settingsOf(policy: PolicyConfig): Record<string, unknown> {
    const secrets = new Set(this.active.typeOf(policy).secrets?.(policy) ?? []);
    const written = writtenPolicy(this.active.current, policy.name) ?? { name: policy.name, type: policy.type };
    return hideSecrets(written, secrets) as Record<string, unknown>;
  }
}

/** Keys whose values are secrets whatever they hold (`secret_token`, `password`; not `secrets_dir`, a path). */
const SECRET_KEY = /^(?:\w+_)?(?:token|secret|password|passphrase|private_key|api_key|credentials?)$/i;

export function hideSecrets(value: unknown, secrets: ReadonlySet<string>, key = ''): unknown {
  if (typeof value === 'string') {
    if ((SECRET_KEY.test(key) && value !== '') || secrets.has(value) || redactor.holdsSecret(value)) return '(secret)';
    return value;
  }
  if (Array.isArray(value)) return value.map((item) => hideSecrets(item, secrets, key));
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(
      Object.entries(value).map(([name, field]) => [
        name,
        SECRET_KEY.test(name) && typeof field !== 'object' && field !== '' && field !== undefined
          ? '(secret)'
          : hideSecrets(field, secrets, name),
      ]),
    );
  }
  return value;
}

export function describeTrigger(trigger: Trigger): string {
  if ('every' in trigger) return `every ${formatDuration(trigger.every)}`;
  return `cron ${trigger.cron}${trigger.timezone ? ` (${trigger.timezone})` : ''}`;
}

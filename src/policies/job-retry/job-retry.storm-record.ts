import type { PolicyState } from '../../engine/policy';
import { readJsonObject } from '../../engine/json';

/**
 * The storm record of a job_retry policy, one JSON value in the policy's Redis state: the storm in progress (if any),
 * the failures and retries counted within the window, the jobs held, and the storm retries that do not count against
 * max_retries. Written only by an acting pass's commit (one pass of a policy runs at a time), read by every pass.
 */
export const STORM_KEY = 'storm';

/** A failed job that would have been retried, as counted towards a storm. */
export interface Arrival {
  /** The decision's key (`projectId:jobId`): a job read again on a later pass is counted once. */
  readonly key: string;
  /** When it finished, epoch ms. */
  readonly at: number;
  readonly project: number;
  readonly sig: string;
}

/** A retry the bot made outside a storm's probes, and the signature its new attempt failed with, once seen. */
export interface BotRetry {
  readonly slot: string;
  /** The job retried: a failed attempt of the slot with a larger id is its new attempt, failed again. */
  readonly job: number;
  readonly at: number;
  readonly again?: string;
}

/** A failed job the storm keeps instead of retrying: the newest attempt of its name in its pipeline. */
export interface HeldJob {
  readonly project: number;
  /** The project as the policy lists it. */
  readonly source: string;
  readonly job_id: number;
  readonly pipeline_id: number;
  readonly job_name: string;
  readonly sig: string;
  /** When it was first held, epoch ms. */
  readonly since: number;
}

export interface Storm {
  readonly signature: string;
  /** Epoch ms. */
  readonly since: number;
  /** What started it, for people. */
  readonly why: string;
  /** Probe retries made so far. */
  readonly probes: number;
  /** The probe retried and not yet seen finished: its slot, and the job whose retry it was. */
  readonly probe?: { readonly slot: string; readonly job: number; readonly at: number };
  /** The slot probed last: probed again while it fails with the signature, so one job carries the storm's retries. */
  readonly last_probe?: string;
  /** No probe before this, epoch ms. */
  readonly next_probe_at: number;
  /** The last failure with the signature (a new one, or a probe's), epoch ms. */
  readonly last_failure_at: number;
}

/** Retries made in a storm that failed again with its signature, by slot: they do not count against max_retries. */
export interface FreeRetries {
  readonly n: number;
  readonly at: number;
}

export interface StormRecord {
  readonly storm?: Storm;
  readonly arrivals: readonly Arrival[];
  readonly retries: readonly BotRetry[];
  readonly held: readonly HeldJob[];
  readonly free: Readonly<Record<string, FreeRetries>>;
  /**
   * When a storm of each signature ended, epoch ms: failures with it that finished before then belonged to that storm
   * (its held jobs, retried after it) and never start another.
   */
  readonly ended?: Readonly<Record<string, number>>;
}

export const EMPTY_STORM_RECORD: StormRecord = { arrivals: [], retries: [], held: [], free: {} };

export class StormRecords {
  constructor(private readonly state: PolicyState) {}

  /** The record as stored; a missing or damaged one is empty: no storm, nothing held, nothing counted yet. */
  async read(): Promise<StormRecord> {
    return parseRecord(await this.state.get(STORM_KEY));
  }

  async write(record: StormRecord): Promise<void> {
    await this.state.set(STORM_KEY, JSON.stringify(record));
  }
}

function parseRecord(text: string | undefined): StormRecord {
  const raw = readJsonObject(text);
  if (!raw) return EMPTY_STORM_RECORD;
  const list = <T>(value: unknown, valid: (entry: Record<string, unknown>) => boolean): T[] =>
    Array.isArray(value)
      ? (value.filter(
          (entry) => typeof entry === 'object' && entry !== null && valid(entry as Record<string, unknown>),
        ) as T[])
      : [];
  const num = (value: unknown): boolean => typeof value === 'number' && Number.isFinite(value);
  const str = (value: unknown): boolean => typeof value === 'string';
  const arrivals = list<Arrival>(raw.arrivals, (e) => str(e.key) && num(e.at) && num(e.project) && str(e.sig));
  const retries = list<BotRetry>(raw.retries, (e) => str(e.slot) && num(e.job) && num(e.at));
  const held = list<HeldJob>(
    raw.held,
    (e) =>
      num(e.project) &&
      str(e.source) &&
      num(e.job_id) &&
      num(e.pipeline_id) &&
      str(e.job_name) &&
      str(e.sig) &&
      num(e.since),
  );
  const free: Record<string, FreeRetries> = {};
  if (typeof raw.free === 'object' && raw.free !== null) {
    for (const [slot, entry] of Object.entries(raw.free as Record<string, unknown>)) {
      const { n, at } = (entry ?? {}) as Record<string, unknown>;
      if (num(n) && num(at)) free[slot] = { n: n as number, at: at as number };
    }
  }
  const ended: Record<string, number> = {};
  if (typeof raw.ended === 'object' && raw.ended !== null) {
    for (const [sig, at] of Object.entries(raw.ended as Record<string, unknown>))
      if (num(at)) ended[sig] = at as number;
  }
  const storm = parseStorm(raw.storm);
  return {
    ...(storm ? { storm } : {}),
    arrivals,
    retries,
    held,
    free,
    ...(Object.keys(ended).length > 0 ? { ended } : {}),
  };
}

function parseStorm(value: unknown): Storm | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const raw = value as Record<string, unknown>;
  const { signature, since, why, probes, next_probe_at: next, last_failure_at: last } = raw;
  if (
    typeof signature !== 'string' ||
    typeof since !== 'number' ||
    typeof probes !== 'number' ||
    typeof next !== 'number' ||
    typeof last !== 'number'
  )
    return undefined;
  const probe = raw.probe as Record<string, unknown> | undefined;
  const validProbe =
    probe && typeof probe.slot === 'string' && typeof probe.job === 'number' && typeof probe.at === 'number';
  return {
    signature,
    since,
    why: typeof why === 'string' ? why : '',
    probes,
    next_probe_at: next,
    last_failure_at: last,
    ...(validProbe ? { probe: { slot: probe.slot as string, job: probe.job as number, at: probe.at as number } } : {}),
    ...(typeof raw.last_probe === 'string' ? { last_probe: raw.last_probe } : {}),
  };
}

import { formatDuration } from '../../config/duration';
import type { JobRetryConfig } from './job-retry.schema';
import type { Arrival, BotRetry, FreeRetries, HeldJob, Storm, StormRecord } from './job-retry.storm-record';

/**
 * Retry storms, decided purely: when one failure signature arrives across many projects at once (a runner outage, a
 * full disk, a registry down), or most of the bot's own retries fail again with it, retrying every job would burn each
 * one's `max_retries` while the cause lasts. In a storm the policy holds those jobs, retries one probe job at a time
 * with backoff, and once a probe succeeds (or the signature has not been seen for `calm_after`) retries every held job,
 * round robin across projects. What this reads and returns is the storm record (job-retry.storm-record.ts keeps it);
 * docs/policies.md, "Retry storms", has the reasoning behind the defaults.
 */

export type StormSettings = JobRetryConfig['storm'];

/** What became of the probe in flight, read from its pipeline (the newest attempt of its name). */
export type ProbeView =
  | { readonly state: 'running' }
  | { readonly state: 'succeeded'; readonly job: number }
  | { readonly state: 'failed'; readonly job: number; readonly sig: string }
  | { readonly state: 'gone' };

/** What observe hands decide about storms: the record as stored, and the probe as read now. */
export interface StormView {
  readonly record: StormRecord;
  readonly probe?: ProbeView;
  /** A webhook's pass: it holds what a storm holds, but starts, ends and probes nothing (the polls do). */
  readonly event?: true;
}

/** A job that would be retried, as the storm sees it. */
export interface WouldRetry {
  readonly key: string;
  readonly project: number;
  readonly source: string;
  readonly job_id: number;
  readonly pipeline_id: number;
  readonly job_name: string;
  readonly finished_at: number;
  readonly sig: string;
}

/** A failed candidate that is a later attempt of its slot (for the bot's retries that failed again). */
export interface LaterAttempt {
  readonly slot: string;
  readonly job_id: number;
  readonly sig: string;
}

/** How long a held job is kept at most, and the free retries remembered: a day, the longest outage worth waiting out. */
export const HOLD_MAX_MS = 86_400_000;
/** The record stays bounded however long a storm lasts: the newest arrivals and retries are enough to count. */
const MAX_COUNTED = 5_000;

/** One job name in one pipeline of one project: what max_retries counts for. */
export function slotOf(project: number, pipelineId: number, jobName: string): string {
  return `${project}:${pipelineId}:${jobName}`;
}

/** The failure's signature: the forge's failure_reason, and the failure_log expression that matched, when one did. */
export function signatureOf(failureReason: string | null | undefined, matched: string | undefined): string {
  return `${failureReason ?? 'unknown_failure'}${matched !== undefined ? ` / log "${matched}"` : ''}`;
}

/** Retries of the slot a storm made that failed again with its signature. */
export function freeRetries(record: StormRecord | undefined, slot: string): number {
  return record?.free[slot]?.n ?? 0;
}

/**
 * The free retries (a storm's retries that failed again with its signature) as this pass counts them: the probe just
 * seen failing again adds one to its slot. Decide counts attempts with these before it asks the storm anything.
 */
export function stormFree(settings: StormSettings, view: StormView, nowDate: Date): Record<string, FreeRetries> {
  const now = nowDate.getTime();
  const free: Record<string, FreeRetries> = Object.fromEntries(
    Object.entries(view.record.free).filter(([, entry]) => entry.at >= now - HOLD_MAX_MS),
  );
  const storm = view.record.storm;
  const probe = view.probe;
  if (view.event || !storm?.probe || probe?.state !== 'failed' || probe.sig !== storm.signature) return free;
  const slot = storm.probe.slot;
  return { ...free, [slot]: { n: (free[slot]?.n ?? 0) + 1, at: now } };
}

/** How long after the probe's `probes`-th retry failed again the next may go: doubling from probe_backoff. */
export function probeBackoff(settings: StormSettings, probes: number): number {
  return Math.min(settings.probe_backoff_max, settings.probe_backoff * 2 ** Math.max(0, probes - 1));
}

/**
 * Why the storm ends now, or undefined while it lasts: its probe succeeded, or no failure with its signature was seen
 * for `calm_after` (a new failure counted, or a probe failing again). The observer asks the same before deciding to read
 * the held jobs again, so both see the same answer.
 */
export function stormEnds(
  settings: StormSettings,
  record: StormRecord,
  probe: ProbeView | undefined,
  now: number,
): string | undefined {
  const storm = record.storm;
  if (!storm) return undefined;
  if (probe?.state === 'succeeded') return `probe job ${probe.job} succeeded`;
  if (probe?.state === 'failed' && probe.sig === storm.signature) return undefined;
  const lastArrival = Math.max(
    0,
    ...record.arrivals.filter((arrival) => arrival.sig === storm.signature).map((arrival) => arrival.at),
  );
  const lastSeen = Math.max(storm.last_failure_at, lastArrival);
  if (now - lastSeen >= settings.calm_after)
    return `no failure with ${storm.signature} for ${formatDuration(settings.calm_after)}`;
  return undefined;
}

/** What the storm makes of one pass: the record to keep, what is held, the probe, and the change, if any. */
export interface StormPlan {
  /** The record after this pass, before its retries are known (see withRetriesMade). */
  readonly record: StormRecord;
  /** The storm this pass runs in (entered now or before), undefined outside one. */
  readonly storm?: Storm;
  readonly entered?: Storm;
  /** Why the storm ended in this pass; its held jobs are then retried in it. */
  readonly left?: { readonly storm: Storm; readonly why: string };
  /** Keys of the would-be retries held instead. */
  readonly held: ReadonlySet<string>;
  /** The probe this pass retries, if one is due. */
  readonly probe?: HeldJob;
  /** Free retries by slot, as this pass's decisions count them. */
  readonly free: Readonly<Record<string, FreeRetries>>;
}

/**
 * The storm's step for one pass: given the record, the probe as read, the jobs the rules would retry, the later
 * attempts seen and the free retries as stormFree counted them, which of those are held, which job is probed, and the record to keep. Pure.
 */
export function planStorm(
  settings: StormSettings,
  view: StormView,
  wouldRetry: readonly WouldRetry[],
  later: readonly LaterAttempt[],
  free: Readonly<Record<string, FreeRetries>>,
  nowDate: Date,
): StormPlan {
  const now = nowDate.getTime();
  const windowStart = now - settings.within;
  const before = view.record;
  // Arrivals counted once each, within the window; a job read again (deferred, open) keeps its first count.
  const ended = Object.fromEntries(Object.entries(before.ended ?? {}).filter(([, at]) => at >= windowStart));
  const counts = (sig: string, at: number) => at >= windowStart && at > (ended[sig] ?? 0);
  const arrivals = new Map(
    before.arrivals
      .filter((arrival) => counts(arrival.sig, arrival.at))
      .map((arrival) => [arrival.key, arrival] as const),
  );
  for (const job of wouldRetry) {
    if (counts(job.sig, job.finished_at) && job.finished_at <= now + settings.within && !arrivals.has(job.key)) {
      arrivals.set(job.key, { key: job.key, at: job.finished_at, project: job.project, sig: job.sig });
    }
  }
  const retries = before.retries
    .filter((retry) => retry.at >= windowStart)
    .map((retry) => {
      if (retry.again !== undefined) return retry;
      const again = later.find((attempt) => attempt.slot === retry.slot && attempt.job_id > retry.job);
      return again ? { ...retry, again: again.sig } : retry;
    });
  let held = before.held.filter((job) => job.since >= now - HOLD_MAX_MS);
  const counted = { arrivals: newest([...arrivals.values()]), retries: newest(retries) };
  const keep = (record: Partial<StormRecord>): StormRecord => ({
    ...counted,
    held,
    free,
    ...(Object.keys(ended).length > 0 ? { ended } : {}),
    ...record,
  });

  let storm = before.storm;
  if (view.event) {
    // A webhook's pass holds what the storm holds and changes nothing: the polls count, probe and keep the record.
    const holding = storm ? wouldRetry.filter((job) => job.sig === storm?.signature) : [];
    return {
      record: before,
      ...(storm ? { storm } : {}),
      held: new Set(holding.map((job) => job.key)),
      free: before.free,
    };
  }

  if (storm) {
    const ends = stormEnds(settings, before, view.probe, now);
    if (ends !== undefined) {
      // Every held job was read again for this pass and is decided like any failure: retried, round robin.
      held = [];
      const signature = storm.signature;
      const record = keep({
        storm: undefined,
        arrivals: counted.arrivals.filter((arrival) => arrival.sig !== signature),
        ended: { ...ended, [signature]: now },
      });
      return { record, left: { storm, why: ends }, held: new Set(), free };
    }
    storm = afterProbe(
      settings,
      storm,
      view.probe,
      now,
      (slot, job) => {
        held = held.map((entry) =>
          slotOf(entry.project, entry.pipeline_id, entry.job_name) === slot
            ? { ...entry, job_id: Math.max(entry.job_id, job) }
            : entry,
        );
      },
      (slot) => {
        held = held.filter((entry) => slotOf(entry.project, entry.pipeline_id, entry.job_name) !== slot);
      },
    );
  }

  let entered: Storm | undefined;
  if (!storm) {
    // Only a signature failing in this pass starts one: failures counted before and already retried (a burst while
    // another storm held its own) have nothing left to hold.
    const failing = new Set([...wouldRetry.map((job) => job.sig), ...later.map((attempt) => attempt.sig)]);
    const start = stormStarts(settings, [...arrivals.values()], retries, failing);
    if (!start) return { record: keep({ storm: undefined }), held: new Set(), free };
    storm = { signature: start.sig, since: now, why: start.why, probes: 0, next_probe_at: now, last_failure_at: now };
    entered = storm;
  }
  const signature = storm.signature;
  const holding = wouldRetry.filter((job) => job.sig === signature);
  if (holding.some((job) => job.finished_at >= (storm?.last_failure_at ?? 0))) {
    storm = {
      ...storm,
      last_failure_at: Math.max(storm.last_failure_at, ...holding.map((job) => Math.min(job.finished_at, now))),
    };
  }
  held = upsertHeld(held, holding, now);
  let probe: HeldJob | undefined;
  if (!storm.probe && now >= storm.next_probe_at && held.length > 0) probe = pickProbe(held, storm.last_probe);
  return {
    record: keep({ storm }),
    storm,
    ...(entered ? { entered } : {}),
    held: new Set(holding.map((job) => job.key).filter((key) => key !== (probe && `${probe.project}:${probe.job_id}`))),
    ...(probe ? { probe } : {}),
    free,
  };
}

/**
 * The record after an acting pass's retries: the probe sent (now in flight) and the other retries made (counted for
 * the failed-again rule). `made` are the keys of the retries done.
 */
export function withRetriesMade(
  plan: StormPlan,
  made: readonly { key: string; slot: string; job: number }[],
  nowDate: Date,
): StormRecord {
  const now = nowDate.getTime();
  const probeKey = plan.probe && `${plan.probe.project}:${plan.probe.job_id}`;
  const probed = made.find((retry) => retry.key === probeKey);
  const others = made
    .filter((retry) => retry.key !== probeKey)
    .map((retry) => ({ slot: retry.slot, job: retry.job, at: now }));
  const record = { ...plan.record, retries: newest([...plan.record.retries, ...others]) };
  if (!probed || !record.storm) return record;
  const storm = record.storm;
  return {
    ...record,
    storm: {
      ...storm,
      probes: storm.probes + 1,
      probe: { slot: probed.slot, job: probed.job, at: now },
      last_probe: probed.slot,
    },
  };
}

/** The probe's news applied: failed again with the signature (free retry, backoff), gone, or still running. */
function afterProbe(
  settings: StormSettings,
  storm: Storm,
  probe: ProbeView | undefined,
  now: number,
  failedAgain: (slot: string, job: number) => void,
  drop: (slot: string) => void,
): Storm {
  if (!storm.probe || !probe || probe.state === 'running') return storm;
  const { probe: inFlight, last_probe: _last, ...rest } = storm;
  if (probe.state === 'failed' && probe.sig === storm.signature) {
    failedAgain(inFlight.slot, probe.job);
    return {
      ...rest,
      last_probe: inFlight.slot,
      last_failure_at: now,
      next_probe_at: now + probeBackoff(settings, storm.probes),
    };
  }
  // Gone, or failed for another reason: it tells nothing about the storm's cause, and is no longer the storm's to hold
  // (a later attempt failing otherwise is found by the listing and decided on its own).
  drop(inFlight.slot);
  return rest;
}

function stormStarts(
  settings: StormSettings,
  arrivals: readonly Arrival[],
  retries: readonly BotRetry[],
  failing: ReadonlySet<string>,
): { sig: string; why: string } | undefined {
  const window = formatDuration(settings.within);
  const bySig = new Map<string, { count: number; projects: Set<number> }>();
  for (const arrival of arrivals) {
    const entry = bySig.get(arrival.sig) ?? { count: 0, projects: new Set<number>() };
    entry.count += 1;
    entry.projects.add(arrival.project);
    bySig.set(arrival.sig, entry);
  }
  const burst = [...bySig]
    .filter(
      ([sig, entry]) =>
        failing.has(sig) && entry.count >= settings.failures && entry.projects.size >= settings.projects,
    )
    .sort((a, b) => b[1].count - a[1].count)[0];
  if (burst)
    return {
      sig: burst[0],
      why: `${burst[1].count} failures with ${burst[0]} within ${window} over ${burst[1].projects.size} projects`,
    };
  if (retries.length < settings.min_retries) return undefined;
  const again = new Map<string, number>();
  for (const retry of retries)
    if (retry.again !== undefined && failing.has(retry.again))
      again.set(retry.again, (again.get(retry.again) ?? 0) + 1);
  const worst = [...again].sort((a, b) => b[1] - a[1])[0];
  if (!worst || worst[1] / retries.length <= settings.failed_again) return undefined;
  return {
    sig: worst[0],
    why: `${worst[1]} of the ${retries.length} retries within ${window} failed again with ${worst[0]}`,
  };
}

/** Held jobs by slot, the newest attempt kept, first-held time kept. */
function upsertHeld(held: readonly HeldJob[], jobs: readonly WouldRetry[], now: number): HeldJob[] {
  const bySlot = new Map(held.map((job) => [slotOf(job.project, job.pipeline_id, job.job_name), job] as const));
  for (const job of jobs) {
    const slot = slotOf(job.project, job.pipeline_id, job.job_name);
    const known = bySlot.get(slot);
    if (known && known.job_id >= job.job_id) continue;
    bySlot.set(slot, {
      project: job.project,
      source: job.source,
      job_id: job.job_id,
      pipeline_id: job.pipeline_id,
      job_name: job.job_name,
      sig: job.sig,
      since: known?.since ?? now,
    });
  }
  return [...bySlot.values()];
}

/**
 * The slot probed last while it is held, else the job held longest (its retries most overdue); ties by project and
 * job, so every replica picks the same.
 */
function pickProbe(held: readonly HeldJob[], last: string | undefined): HeldJob | undefined {
  const again = held.find((job) => slotOf(job.project, job.pipeline_id, job.job_name) === last);
  if (again) return again;
  return [...held].sort((a, b) => a.since - b.since || a.project - b.project || a.job_id - b.job_id)[0];
}

function newest<T extends { readonly at: number }>(entries: readonly T[]): T[] {
  return entries.length <= MAX_COUNTED ? [...entries] : [...entries].sort((a, b) => b.at - a.at).slice(0, MAX_COUNTED);
}

import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { RunningSandbox, SandboxState } from '../../src/sandbox';
import type { WatchedRequest } from '../../src/sandbox/state';
import type { Row } from './compare';
import type { Outcome } from './outcome';
import { BOT_USER_ID, HOOK_AGENT, JUDGE_ROWS, type JudgeName, RuleJudges } from './judges';
import { POLICIES } from './policy-file';
import type { Random } from './random';
import { PERSON, REGISTRY, SUBGROUP, TITLES } from './world';

/**
 * "Humans at work": a seeded person acts on the forge while the daemon works (retries jobs, deletes tags and keys,
 * decides access requests, blocks a user, protects and unprotects branches, archives a project, closes one to the
 * bot's token, deletes the newest backup), and a judge looks at every harmful write of the daemon at the very moment
 * the forge handles it.
 *
 * A write whose premise the forge contradicts at that moment (the new key it keeps is gone, the request it approves
 * is no longer pending, the job it retries was retried) is:
 * - a **race** when the person changed that premise after the daemon began re-reading it for this very action (its
 *   `precondition` requests, which name the action in `X-Forgewarden-Action`): nobody can close that window without a
 *   compare-and-set the forge does not offer, so it is counted, not failed;
 * - a **violation** otherwise: the daemon acted on a belief the forge had already contradicted when it looked (or did
 *   not look at all). A row fails on any violation.
 */

/** The scenario's backed-up group and its retention (policy-file.ts writes the policy). */
export const BACKUP = { group: 'tools', keepLast: 2, schedule: '0 * * * *' } as const;

export type HumanArea = 'jobRetry' | 'registry' | 'access' | 'keys' | 'settings' | 'backup';

/** What the judge found for one policy. */
export interface HumanFigures {
  /** Harmful writes of the daemon the judge looked at (each checked against the forge at that moment). */
  actions: number;
  /** The person's changes on this policy's targets. */
  interventions: number;
  /** Invariant checks made (at each harmful write, after each of the person's steps, and at the end). */
  checks: number;
  violations: string[];
  races: string[];
}

interface Write {
  area: HumanArea;
  /** What the write's premise rests on: the person touching one of these is what may contradict it. */
  keys: string[];
  /** Why the forge contradicts the write now, or undefined when it does not (or it is not the daemon's to judge). */
  contradicted?: () => string | undefined;
  label: string;
  /**
   * A key's removal (its id): when the person took an older key of that title away there, leaving none is their
   * revocation honoured; leaving none after they took the newer one is still a lock-out.
   */
  removal?: number;
  /** An access request approved or denied: the facts its rules read must have been readable (judges.ts). */
  decision?: true;
  /** A deploy key's removal: the project it leaves. */
  project?: number;
}

const BOT_AGENT = 'forgewarden';

function emptyFigures(): HumanFigures {
  return { actions: 0, interventions: 0, checks: 0, violations: [], races: [] };
}

/** The policy area of a daemon request, by the policy named in its headers. */
function areaOfPolicy(policy: string | undefined): HumanArea | undefined {
  switch (policy) {
    case POLICIES.jobRetry:
      return 'jobRetry';
    case POLICIES.registry:
      return 'registry';
    case POLICIES.access:
      return 'access';
    case POLICIES.keys:
      return 'keys';
    case POLICIES.settings:
      return 'settings';
    case HUMANS_BACKUP_POLICY:
      return 'backup';
    default:
      return undefined;
  }
}

export const HUMANS_BACKUP_POLICY = 'chaos-group-backup';

/** The declared protections of the settings policy: a daemon unprotect of a branch already as declared is stale. */
const DECLARED_BRANCHES: Readonly<Record<string, { push: number; merge: number }>> = {
  main: { push: 40, merge: 30 },
  'release/*': { push: 0, merge: 40 },
};

export class Judge {
  private seq = 0;
  /** Key → sequence numbers of the person's changes to it. */
  private readonly humanAt = new Map<string, number[]>();
  /** Action id → sequence number where its latest precondition run began. */
  private readonly preconditionFrom = new Map<string, number>();
  /** Action id → the phase of its latest request. */
  private readonly lastPhase = new Map<string, string>();
  /** Key → the action id of the daemon's latest write to it (a repeat of the same request is no new decision). */
  private readonly lastBotWrite = new Map<string, string>();
  readonly figures: Record<HumanArea, HumanFigures> = {
    jobRetry: emptyFigures(),
    registry: emptyFigures(),
    access: emptyFigures(),
    keys: emptyFigures(),
    settings: emptyFigures(),
    backup: emptyFigures(),
  };
  /** Every key the person touched, for the end's "healthy targets". */
  readonly touched = new Set<string>();
  /** Place → ids of the keys the person took away there: a rotation's newer key goes there too (a revocation wins). */
  private readonly revokedByPerson = new Map<string, number[]>();
  /** Place (`deploy:<project id>`, `ssh:<user id>`) → sequence number of the daemon's latest read of its keys. */
  private readonly lastRead = new Map<string, number>();
  /** The judges of the rules the person's rights changes test (judges.ts). */
  readonly rules: RuleJudges;

  constructor(private readonly state: SandboxState) {
    this.rules = new RuleJudges(state);
  }

  /** The watcher to register on the sandbox (`state.watchers`). */
  readonly watch = (request: WatchedRequest): void => {
    const seq = ++this.seq;
    const agent = request.headers['user-agent'] ?? '';
    if (agent.startsWith(HOOK_AGENT)) {
      this.rules.hook(request, (key) => this.changedSinceRead(key));
      return;
    }
    if (!agent.startsWith(BOT_AGENT)) {
      if (request.method !== 'GET') {
        const write = writeOf(this.state, request);
        if (write) this.human(write.area, write.keys, seq);
        if (write?.removal !== undefined)
          for (const key of write.keys)
            this.revokedByPerson.set(key, [...(this.revokedByPerson.get(key) ?? []), write.removal]);
        this.rules.person(request);
      }
      return;
    }
    const action = request.headers['x-forgewarden-action'];
    const phase = request.headers['x-forgewarden-phase'];
    if (action !== undefined && phase !== undefined) {
      if (phase === 'precondition' && this.lastPhase.get(action) !== 'precondition')
        this.preconditionFrom.set(action, seq);
      this.lastPhase.set(action, phase);
    }
    if (request.method === 'GET') this.noteRead(request.path, seq);
    this.rules.bot(request);
    if (request.method === 'GET') return;
    const write = writeOf(this.state, request);
    if (write?.decision) {
      const from = action === undefined ? undefined : this.preconditionFrom.get(action);
      this.rules.decision(
        write.label,
        from !== undefined && (this.humanAt.get(`admin:${BOT_USER_ID}`) ?? []).some((at) => at > from),
      );
    }
    if (!write?.contradicted) return;
    const area = areaOfPolicy(request.headers['x-forgewarden-policy']) ?? write.area;
    const figures = this.figures[area];
    figures.actions += 1;
    figures.checks += 1;
    const repeat = action !== undefined && write.keys.every((key) => this.lastBotWrite.get(key) === action);
    for (const key of write.keys) if (action !== undefined) this.lastBotWrite.set(key, action);
    const removed = write.removal;
    const honoursRevocation =
      removed !== undefined &&
      write.keys.some((key) => (this.revokedByPerson.get(key) ?? []).some((older) => older < removed));
    const withdrawsPersonLink =
      removed !== undefined && write.project !== undefined && this.rules.personLinked(removed, write.project);
    const why = honoursRevocation || withdrawsPersonLink ? undefined : write.contradicted();
    // The same request again (the client repeating a write whose answer was lost) meets what its first attempt did.
    if (why === undefined || repeat) return;
    const from = action === undefined ? undefined : this.preconditionFrom.get(action);
    const changedSince =
      from !== undefined && write.keys.some((key) => (this.humanAt.get(key) ?? []).some((at) => at > from));
    const line = `${write.label}: ${why}`;
    if (changedSince) figures.races.push(`${line} (the person changed it while the daemon re-read it)`);
    else figures.violations.push(`${line}${from === undefined ? ' (no precondition read for this action)' : ''}`);
  };

  /** A change the person made that the watcher cannot see (the control API, the sandbox's own state, the disk). */
  human(area: HumanArea, keys: readonly string[], at = ++this.seq): void {
    this.figures[area].interventions += 1;
    for (const key of keys) {
      this.touched.add(key);
      this.humanAt.set(key, [...(this.humanAt.get(key) ?? []), at]);
    }
  }

  /** Whether the person changed `place:title` (`deploy:2:release-api`) after the daemon last read that place's keys. */
  private changedSinceRead(key: string): boolean {
    const place = key.split(':').slice(0, 2).join(':');
    const read = Math.max(
      this.lastRead.get(place) ?? 0,
      place.startsWith('deploy:') ? (this.lastRead.get('deploy:*') ?? 0) : 0,
    );
    return (this.humanAt.get(key) ?? []).some((at) => at > read);
  }

  /** The daemon's reads of keys, for `changedSinceRead`. */
  private noteRead(path: string, seq: number): void {
    let match: RegExpExecArray | null;
    if ((match = /^\/api\/v4\/projects\/([^/]+)\/deploy_keys$/.exec(path))) {
      const project = this.state.project(decodeURIComponent(match[1]), { followRedirects: true });
      if (project) this.lastRead.set(`deploy:${project.id}`, seq);
    } else if (path === '/api/v4/deploy_keys') this.lastRead.set('deploy:*', seq);
    else if (path === '/api/v4/user/keys') this.lastRead.set(`ssh:${BOT_USER_ID}`, seq);
    else if ((match = /^\/api\/v4\/users\/(\d+)\/keys$/.exec(path))) this.lastRead.set(`ssh:${match[1]}`, seq);
  }

  /** An invariant checked outside of a write (after a step of the person, at the end). */
  check(area: HumanArea, violation: string | undefined): void {
    this.figures[area].checks += 1;
    if (violation !== undefined) this.figures[area].violations.push(violation);
  }
}

/** A project by id or URL-encoded path, as the API takes it (an old path of a moved project too, as the forge routes it). */
function projectOf(state: SandboxState, ref: string) {
  return state.project(decodeURIComponent(ref), { followRedirects: true });
}

/** The harmful writes the judge knows, with what their premise rests on and how the forge can contradict it. */
function writeOf(state: SandboxState, request: WatchedRequest): Write | undefined {
  const { method, path, body } = request;
  let match: RegExpExecArray | null;

  if (method === 'POST' && (match = /^\/api\/v4\/projects\/([^/]+)\/jobs\/(\d+)\/retry$/.exec(path))) {
    const jobId = Number(match[2]);
    return {
      area: 'jobRetry',
      keys: [`job:${jobId}`],
      label: `retry of job ${jobId}`,
      contradicted: () => (state.jobs.get(jobId)?.retried ? `job ${jobId} was retried already` : undefined),
    };
  }

  if (
    (match = /^\/api\/v4\/(?:user|users\/(\d+))\/keys(?:\/(\d+))?$/.exec(path)) &&
    (method === 'POST' || method === 'DELETE')
  ) {
    const userId = match[1] !== undefined ? Number(match[1]) : 1;
    const keyId = match[2] !== undefined ? Number(match[2]) : undefined;
    const keysOf = () => [...state.sshKeys.values()].filter((key) => key.user_id === userId);
    if (method === 'DELETE' && keyId !== undefined) {
      const title = state.sshKeys.get(keyId)?.title;
      if (title === undefined) return { area: 'keys', keys: [], label: `removal of SSH key ${keyId}` };
      return {
        area: 'keys',
        keys: [`ssh:${userId}:${title}`],
        removal: keyId,
        label: `removal of SSH key ${keyId} "${title}" of user ${userId}`,
        contradicted: () =>
          keysOf().some((key) => key.id !== keyId && key.title === title)
            ? undefined
            : `user ${userId} would keep no key titled "${title}"`,
      };
    }
    if (method === 'POST' && keyId === undefined && typeof body.title === 'string') {
      const title = body.title;
      return {
        area: 'keys',
        keys: [`ssh:${userId}:${title}`],
        label: `upload of SSH key "${title}" to user ${userId}`,
        contradicted: () =>
          keysOf().some((key) => key.title === title)
            ? undefined
            : `user ${userId} no longer holds the old key "${title}" (a person removed it)`,
      };
    }
    return undefined;
  }

  if (
    (match = /^\/api\/v4\/projects\/([^/]+)\/deploy_keys(?:\/(\d+)(\/enable)?)?$/.exec(path)) &&
    (method === 'POST' || method === 'DELETE')
  ) {
    const project = projectOf(state, match[1]);
    if (!project) return undefined;
    const keyId = match[2] !== undefined ? Number(match[2]) : undefined;
    const keysOn = () => [...state.deployKeys.values()].filter((key) => key.projects.has(project.id));
    const title =
      keyId !== undefined
        ? state.deployKeys.get(keyId)?.title
        : typeof body.title === 'string'
          ? body.title
          : undefined;
    if (title === undefined) return undefined;
    const where = state.projectFullPath(project);
    const keys = [`deploy:${project.id}:${title}`];
    if (method === 'DELETE' && keyId !== undefined && match[3] === undefined) {
      return {
        area: 'keys',
        keys,
        removal: keyId,
        project: project.id,
        label: `removal of deploy key ${keyId} "${title}" from ${where}`,
        contradicted: () =>
          state.deployKeys.get(keyId)?.projects.has(project.id) !== true ||
          keysOn().some((key) => key.id !== keyId && key.title === title)
            ? undefined
            : `${where} would keep no deploy key titled "${title}"`,
      };
    }
    if (method === 'POST') {
      return {
        area: 'keys',
        keys,
        label: `${keyId === undefined ? 'creation' : `enabling of deploy key ${keyId}`} "${title}" on ${where}`,
        contradicted: () =>
          keysOn().some((key) => key.title === title && key.id !== keyId)
            ? undefined
            : `${where} no longer holds the old key "${title}" (a person removed it)`,
      };
    }
    return undefined;
  }

  if (
    (match = /^\/api\/v4\/(groups|projects)\/([^/]+)\/access_requests\/(\d+)(\/approve)?$/.exec(path)) &&
    (method === 'PUT' || method === 'DELETE')
  ) {
    const kind = match[1] === 'groups' ? 'group' : 'project';
    const source = kind === 'group' ? state.group(decodeURIComponent(match[2])) : projectOf(state, match[2]);
    if (!source) return undefined;
    const userId = Number(match[3]);
    const approve = method === 'PUT' && match[4] !== undefined;
    const pending = () =>
      state.accessRequests.some(
        (request) => request.source === kind && request.source_id === source.id && request.user_id === userId,
      );
    return {
      area: 'access',
      decision: true,
      keys: [`request:${kind}:${source.id}:${userId}`, ...(approve ? [`user:${userId}`] : [])],
      label: `${approve ? 'approval' : 'denial'} of user ${userId}'s request to ${kind} ${source.id}`,
      contradicted: () => {
        if (!pending()) return 'the request is no longer pending';
        if (approve && state.users.get(userId)?.state === 'blocked') return `user ${userId} is blocked`;
        return undefined;
      },
    };
  }

  if (
    (match = /^\/api\/v4\/projects\/([^/]+)\/protected_branches(?:\/([^/]+))?$/.exec(path)) &&
    (method === 'POST' || method === 'DELETE')
  ) {
    const project = projectOf(state, match[1]);
    const name =
      match[2] !== undefined ? decodeURIComponent(match[2]) : typeof body.name === 'string' ? body.name : undefined;
    if (!project || name === undefined) return undefined;
    const where = state.projectFullPath(project);
    const record = () =>
      [...state.protectedBranches.values()].find((branch) => branch.project_id === project.id && branch.name === name);
    const keys = [`branch:${project.id}:${name}`];
    if (method === 'DELETE') {
      return {
        area: 'settings',
        keys,
        label: `unprotect of ${name} on ${where}`,
        contradicted: () => {
          const current = record();
          if (!current) return `${name} is not protected`;
          const declared = DECLARED_BRANCHES[name];
          const levels = (entries: readonly { access_level: number | null }[]) =>
            entries.map((entry) => entry.access_level).join(',');
          if (
            declared &&
            levels(current.push_access_levels) === String(declared.push) &&
            levels(current.merge_access_levels) === String(declared.merge)
          ) {
            return `${name} is protected as declared already`;
          }
          return undefined;
        },
      };
    }
    return { area: 'settings', keys, label: `protect of ${name} on ${where}` };
  }

  // The person's rights and place changes (the daemon makes none): what they touch, for the races.
  if ((match = /^\/api\/v4\/projects\/([^/]+)(\/transfer)?$/.exec(path)) && method === 'PUT') {
    const project = projectOf(state, match[1]);
    return project
      ? {
          area: 'settings',
          keys: [`moved:${project.id}`],
          label: `${match[2] ? 'transfer' : 'edit'} of project ${project.id}`,
        }
      : undefined;
  }
  if ((match = /^\/api\/v4\/users\/(\d+)\/(block|unblock)$/.exec(path)) && method === 'POST') {
    return { area: 'access', keys: [`user:${match[1]}`], label: `${match[2]} of user ${match[1]}` };
  }
  if ((match = /^\/api\/v4\/users\/(\d+)$/.exec(path)) && method === 'PUT' && body.admin !== undefined) {
    return { area: 'access', keys: [`admin:${match[1]}`], label: `administrator flag of user ${match[1]}` };
  }
  if ((match = /^\/api\/v4\/(groups|projects)\/([^/]+)\/members\/(\d+)$/.exec(path)) && method === 'PUT') {
    return {
      area: 'settings',
      keys: [`role:${match[3]}`],
      label: `role of user ${match[3]} in ${match[1]} ${decodeURIComponent(match[2])}`,
    };
  }

  if (
    (match = /^\/api\/v4\/projects\/([^/]+)\/registry\/repositories\/(\d+)\/tags(?:\/([^/]+))?$/.exec(path)) &&
    method === 'DELETE'
  ) {
    const repositoryId = Number(match[2]);
    const keys = [`repository:${repositoryId}`];
    // A bulk deletion is evaluated by the forge when it runs, so it has no premise of the daemon's to judge.
    if (match[3] === undefined) return { area: 'registry', keys, label: `bulk deletion in repository ${repositoryId}` };
    const name = decodeURIComponent(match[3]);
    return {
      area: 'registry',
      keys,
      label: `deletion of tag ${name} in repository ${repositoryId}`,
      contradicted: () => keptNewer(state, repositoryId, name),
    };
  }
  return undefined;
}

/**
 * Why deleting `name` breaks keep_n now, or undefined: the tags the rules may delete (all but `latest` and the keep
 * pattern's) newer than it (no creation time counting as newest, as on the forge) must be at least keep_n.
 */
function keptNewer(state: SandboxState, repositoryId: number, name: string): string | undefined {
  const tags = state.repositories.get(repositoryId)?.tags;
  const tag = tags?.get(name);
  if (!tags || !tag) return undefined;
  const keep = new RegExp(REGISTRY.nameRegexKeep);
  const time = (createdAt: string | null) => (createdAt === null ? Number.POSITIVE_INFINITY : Date.parse(createdAt));
  const newer = [...tags.values()].filter(
    (other) =>
      other.name !== name &&
      other.name !== 'latest' &&
      !keep.test(other.name) &&
      time(other.created_at) > time(tag.created_at),
  ).length;
  return newer >= REGISTRY.keepN
    ? undefined
    : `only ${newer} newer tags are left, fewer than keep_n ${REGISTRY.keepN}: ${name} is among the newest`;
}

/** The person's choices in `act`'s order, as the closing line names them. */
const CHOICE_KINDS = [
  'job retries',
  'tag deletions',
  'SSH key deletions',
  'deploy key changes',
  'request decisions',
  'blocks',
  'branch changes',
  'archivings',
  'closings to the bot',
  'backup deletions',
  'transfers',
  'renames',
  'unblocks',
  'administrator flags taken',
  'roles lowered',
  'reprotects set up to be cut',
];
/** How long the bot user's rights stay away: a few seconds, up to about two of its passes. */
const RIGHTS_MS: readonly [number, number] = [1_500, 4_000];
/** How long a project stays moved or renamed. */
const MOVED_MS: readonly [number, number] = [2_000, 6_000];
/** How long a reprotect to cut is waited for: the daemon's next pass, under faults. */
const CUT_WAIT_MS = 15_000;
/** And its protect, once the unprotect went through: the daemon's next request there. */
const CUT_PROTECT_WAIT_MS = 5_000;
const REPORTER = 20;
const DEVELOPER = 30;
const OWNER = 50;

/**
 * The person: every `gapMs` (random within bounds) one change of the forge, made through its API with their own token
 * (or, for what the API does not offer, the control API or the sandbox's state), at a moment the daemon is held at
 * the forge's door mid-pass when it is working (a hold on its next request), or between its passes when it is not.
 */
export class Person {
  private archived = false;
  private revoked = false;
  readonly deletedBackups = new Set<string>();
  steps = 0;
  /** The person's changes by kind (`transfers`, `admin flag restores`, ...), for the closing line. */
  readonly made = new Map<string, number>();
  /** Changes to undo a few seconds later (the bot's rights, a project's place), the earliest first when due. */
  private readonly pending: Array<{ at: number; kind: string; run: () => Promise<boolean> }> = [];
  /** The bot user's rights are away (one window at a time). */
  private rightsAway = false;
  /** Projects moved or renamed, until they are back. */
  private readonly moved = new Set<number>();
  /** A reprotect is set up to be cut from then on until one was, so a run has one (the random choice may never pick it). */
  private firstCutBy = Number.POSITIVE_INFINITY;
  /** A reprotect is being waited for, to cut it in half (one at a time). */
  private cutting: Promise<void> | undefined;
  /** Its project, until `main` is protected there again: the person leaves that branch to the daemon meanwhile. */
  private cuttingProject: number | undefined;

  constructor(
    private readonly sandbox: RunningSandbox,
    private readonly judge: Judge,
    private readonly random: Random,
    private readonly backupFolder: string,
  ) {}

  /** Acts until `until` (ms since the epoch), then returns. */
  async work(until: number, gapMs: [number, number]): Promise<void> {
    this.firstCutBy = Date.now() + (until - Date.now()) / 3;
    while (Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, this.random.int(gapMs[0], gapMs[1])));
      if (Date.now() >= until) break;
      await this.step(false);
    }
    await this.cutting;
    // Whatever was taken away or moved comes back before the person leaves, each at a step of its own.
    while (this.pending.length > 0) await this.step(true);
  }

  private async step(closing: boolean): Promise<void> {
    const state = this.sandbox.state;
    const hold = state.holds.add({ agent: BOT_AGENT, times: 1 });
    // Mid-pass when the daemon is working: its next request waits at the door while the person acts.
    await Promise.race([state.holds.reached(hold.id), new Promise((resolve) => setTimeout(resolve, 1_000))]);
    try {
      checkBackups(this.judge, this.backupFolder, this.deletedBackups);
      this.judge.rules.checkAll(false);
      const due = this.pending.findIndex((change) => closing || change.at <= Date.now());
      if (due >= 0) {
        const [change] = this.pending.splice(due, 1);
        if (await change.run()) this.count(change.kind);
        // Not done (the forge answered with faults only): tried again at a later step.
        else this.pending.push({ ...change, at: Date.now() + 500 });
      } else await this.act();
      this.steps += 1;
      checkBackups(this.judge, this.backupFolder, this.deletedBackups);
      this.judge.rules.checkAll(false);
    } finally {
      state.holds.release(hold.id);
    }
  }

  private count(kind: string): void {
    this.made.set(kind, (this.made.get(kind) ?? 0) + 1);
  }

  /** `run` in `[min, max]` ms, at a step of the person's; it says whether the change took. */
  private later(range: readonly [number, number], kind: string, run: () => Promise<boolean>): void {
    this.pending.push({ at: Date.now() + this.random.int(range[0], range[1]), kind, run });
    this.pending.sort((a, b) => a.at - b.at);
  }

  private async act(): Promise<void> {
    const choices: Array<() => Promise<boolean>> = [
      () => this.retryJob(),
      () => this.deleteTag(),
      () => this.deleteSshKey(),
      () => this.changeDeployKey(),
      () => this.decideRequest(),
      () => this.blockRequester(),
      () => this.changeBranch(),
      () => this.archiveProject(),
      () => this.closeProjectToBot(),
      () => this.deleteNewestBackup(),
      () => this.transferProject(),
      () => this.renameProject(),
      () => this.unblockRequester(),
      () => this.takeAdminFlag(),
      () => this.lowerRole(),
      () => this.cutReprotect(),
    ];
    // Until one reprotect was cut (the daemon's unprotect may not come within the wait), one is set up again.
    const cut = CHOICE_KINDS.indexOf('reprotects set up to be cut');
    if (!this.made.has('reprotects cut') && Date.now() >= this.firstCutBy && (await choices[cut]())) {
      this.count(CHOICE_KINDS[cut]);
      return;
    }
    // A choice with nothing to act on gives way to another; ten tries are plenty.
    for (let tries = 0; tries < 10; tries++) {
      const choice = this.random.int(0, choices.length - 1);
      if (await choices[choice]()) {
        this.count(CHOICE_KINDS[choice]);
        return;
      }
    }
  }

  private pick<T>(items: readonly T[]): T | undefined {
    return items.length === 0 ? undefined : items[this.random.int(0, items.length - 1)];
  }

  /** A request as a person makes it: tried again after an answer that is no answer (a fault), like clicking again. */
  private async api(method: string, path: string, body?: unknown): Promise<number> {
    for (let attempt = 0; ; attempt++) {
      const response = await fetch(`${this.sandbox.url}/api/v4${path}`, {
        method,
        headers: {
          'PRIVATE-TOKEN': PERSON.token,
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      }).catch(() => undefined);
      await response?.arrayBuffer();
      const status = response?.status ?? 0;
      if ((status === 0 || status === 429 || status >= 500) && attempt < 4) {
        await new Promise((resolve) => setTimeout(resolve, 300));
        continue;
      }
      return status;
    }
  }

  private async control(method: string, path: string, body?: unknown): Promise<number> {
    const response = await fetch(`${this.sandbox.url}/__sandbox${path}`, {
      method,
      ...(body !== undefined ? { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) } : {}),
    });
    await response.arrayBuffer();
    return response.status;
  }

  private async retryJob(): Promise<boolean> {
    const state = this.sandbox.state;
    const job = this.pick(
      [...state.jobs.values()].filter(
        (candidate) => candidate.status === 'failed' && !candidate.retried && candidate.id < 5_000,
      ),
    );
    if (!job) return false;
    await this.api('POST', `/projects/${job.project_id}/jobs/${job.id}/retry`);
    return true;
  }

  private async deleteTag(): Promise<boolean> {
    const state = this.sandbox.state;
    const repository = this.pick([...state.repositories.values()].filter((candidate) => candidate.tags.size > 0));
    const tag = repository && this.pick([...repository.tags.keys()]);
    if (!repository || tag === undefined) return false;
    await this.api(
      'DELETE',
      `/projects/${repository.project_id}/registry/repositories/${repository.id}/tags/${encodeURIComponent(tag)}`,
    );
    return true;
  }

  private async deleteSshKey(): Promise<boolean> {
    const key = this.pick(
      [...this.sandbox.state.sshKeys.values()].filter(
        (candidate) => candidate.user_id === 1 && new RegExp(TITLES.ssh).test(candidate.title),
      ),
    );
    if (!key) return false;
    await this.api('DELETE', `/users/1/keys/${key.id}`);
    return true;
  }

  /** Removes a release key from one project, or (one time in three) enables one on a project it is not on. */
  private async changeDeployKey(): Promise<boolean> {
    const state = this.sandbox.state;
    const keys = [...state.deployKeys.values()].filter((candidate) => new RegExp(TITLES.deploy).test(candidate.title));
    if (this.random.int(0, 2) === 0) {
      const projects = [...state.projects.values()];
      const options = keys.flatMap((key) =>
        projects.filter((project) => !key.projects.has(project.id)).map((project) => ({ key, project })),
      );
      const choice = this.pick(options);
      if (!choice) return false;
      await this.api('POST', `/projects/${choice.project.id}/deploy_keys/${choice.key.id}/enable`);
      return true;
    }
    const links = keys.flatMap((key) => [...key.projects.keys()].map((project) => ({ key, project })));
    const link = this.pick(links);
    if (!link) return false;
    await this.api('DELETE', `/projects/${link.project}/deploy_keys/${link.key.id}`);
    return true;
  }

  private async decideRequest(): Promise<boolean> {
    const request = this.pick(this.sandbox.state.accessRequests);
    if (!request) return false;
    const base = `/${request.source === 'group' ? 'groups' : 'projects'}/${request.source_id}/access_requests/${request.user_id}`;
    if (this.random.int(0, 1) === 0) await this.api('PUT', `${base}/approve`, { access_level: 30 });
    else await this.api('DELETE', base);
    return true;
  }

  /** An administrator blocks a user who is waiting for access (the forge's `POST /users/:id/block`). */
  private async blockRequester(): Promise<boolean> {
    const state = this.sandbox.state;
    const request = this.pick(
      state.accessRequests.filter((candidate) => state.users.get(candidate.user_id)?.state === 'active'),
    );
    if (!request) return false;
    await this.api('POST', `/users/${request.user_id}/block`);
    return true;
  }

  /** An administrator unblocks a blocked user who is waiting for access (the seeded `blocked-1`, or one blocked above). */
  private async unblockRequester(): Promise<boolean> {
    const state = this.sandbox.state;
    const request = this.pick(
      state.accessRequests.filter((candidate) => state.users.get(candidate.user_id)?.state === 'blocked'),
    );
    if (!request) return false;
    await this.api('POST', `/users/${request.user_id}/unblock`);
    return true;
  }

  /** The acme projects the person may move or rename now: not archived, not moved already. */
  private movable() {
    const state = this.sandbox.state;
    return ['acme/api', 'acme/web', 'acme/worker']
      .map((path) => state.project(path))
      .filter((project) => project !== undefined && !project.archived && !this.moved.has(project.id));
  }

  /**
   * A project moves into acme/platform (still within `acme/**`, and within acme's top level, which a project whose
   * registry holds tags may not leave) and back a few seconds later, its id kept.
   */
  private async transferProject(): Promise<boolean> {
    const state = this.sandbox.state;
    const project = this.pick(this.movable());
    const subgroup = state.group(`${SUBGROUP.parent}/${SUBGROUP.path}`);
    const home = project && state.groups.get(project.namespace_id);
    if (!project || !subgroup || !home) return false;
    this.moved.add(project.id);
    // Judged by what the forge holds after: a transfer whose answer a fault took is still made.
    await this.api('PUT', `/projects/${project.id}/transfer`, { namespace: subgroup.id });
    if (project.namespace_id !== subgroup.id) {
      this.moved.delete(project.id);
      return false;
    }
    this.later(MOVED_MS, 'transfers back', async () => {
      if (project.namespace_id !== home.id)
        await this.api('PUT', `/projects/${project.id}/transfer`, { namespace: home.id });
      const back = project.namespace_id === home.id;
      if (back) this.moved.delete(project.id);
      return back;
    });
    return true;
  }

  /** A project's path changes (its id and name kept; the old path redirects) and comes back a few seconds later. */
  private async renameProject(): Promise<boolean> {
    const project = this.pick(this.movable());
    if (!project) return false;
    const path = project.path;
    this.moved.add(project.id);
    await this.api('PUT', `/projects/${project.id}`, { path: `${path}-renamed` });
    if (project.path === path) {
      this.moved.delete(project.id);
      return false;
    }
    this.later(MOVED_MS, 'renames back', async () => {
      if (project.path !== path) await this.api('PUT', `/projects/${project.id}`, { path });
      const back = project.path === path;
      if (back) this.moved.delete(project.id);
      return back;
    });
    return true;
  }

  /** The bot user's administrator flag goes for a few seconds (it keeps its memberships: owner of every project). */
  private async takeAdminFlag(): Promise<boolean> {
    // Not while a reprotect is awaited: the cut takes the rights itself when the daemon's protect arrives.
    if (this.rightsAway || this.cutting) return false;
    this.rightsAway = true;
    this.judge.rules.rights(true);
    await this.api('PUT', `/users/${BOT_USER_ID}`, { admin: false });
    this.later(RIGHTS_MS, 'administrator flags given back', () => this.giveRightsBack(undefined));
    return true;
  }

  /**
   * The bot user becomes a reporter of acme and of one of its projects for a few seconds. An administrator's role is
   * owner everywhere, so the flag goes for the same time too: only then does the lowered membership take effect.
   */
  private async lowerRole(): Promise<boolean> {
    const state = this.sandbox.state;
    const group = state.group(SUBGROUP.parent);
    const project = this.pick(
      ['acme/api', 'acme/web', 'acme/worker']
        .map((path) => state.project(path, { followRedirects: true }))
        .filter((candidate) => candidate !== undefined),
    );
    if (this.rightsAway || this.cutting || !group || !project) return false;
    this.rightsAway = true;
    this.judge.rules.rights(true);
    await this.api('PUT', `/users/${BOT_USER_ID}`, { admin: false });
    // The group first: a project's role may not be lower than the one inherited from its group.
    await this.api('PUT', `/groups/${group.id}/members/${BOT_USER_ID}`, { access_level: REPORTER });
    await this.api('PUT', `/projects/${project.id}/members/${BOT_USER_ID}`, { access_level: REPORTER });
    this.later(RIGHTS_MS, 'roles given back', () => this.giveRightsBack({ group: group.id, project: project.id }));
    return true;
  }

  /**
   * The issue's half-done reprotect, made certain: the person lets developers push to `main` of an acme project (a
   * level change the daemon makes by unprotect, then protect), and holds the daemon's protect of that project at the
   * door; once it waits there (its unprotect done), the bot user's role there is lowered and its flag taken, and the
   * protect goes on to meet a 403. The rights come back a few seconds later, and the judge wants `main` protected
   * again within a pass (and slack) of that.
   */
  private async cutReprotect(): Promise<boolean> {
    const state = this.sandbox.state;
    const group = state.group(SUBGROUP.parent);
    const project = this.pick(
      ['acme/api', 'acme/web', 'acme/worker']
        .map((path) => state.project(path))
        .filter((candidate) => candidate !== undefined && !candidate.archived),
    );
    if (this.rightsAway || this.cutting || this.cuttingProject !== undefined || !group || !project) return false;
    const drift = { name: 'main', push_access_level: DEVELOPER, merge_access_level: DEVELOPER };
    if (
      [...state.protectedBranches.values()].some((branch) => branch.project_id === project.id && branch.name === 'main')
    )
      await this.api('DELETE', `/projects/${project.id}/protected_branches/main`);
    await this.api('POST', `/projects/${project.id}/protected_branches`, drift);
    const where = `^/api/v4/projects/(?:${project.id}|${state.projectFullPath(project).split('/').join('(?:%2F|%2f|/)')})/protected_branches`;
    // The daemon's unprotect of main first: once it comes, its protect (the next POST there) is held in turn.
    const unprotect = state.holds.add({ agent: BOT_AGENT, method: 'DELETE', path: `${where}/main$`, times: 1 });
    const arrives = (id: number, ms: number) =>
      Promise.race([
        state.holds.reached(id).then(() => (state.holds.get(id)?.waiting ?? 0) > 0),
        new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms)),
      ]);
    this.cutting = (async () => {
      let protect: number | undefined;
      try {
        if (!(await arrives(unprotect.id, CUT_WAIT_MS))) return;
        protect = state.holds.add({ agent: BOT_AGENT, method: 'POST', path: `${where}$`, times: 1 }).id;
        state.holds.release(unprotect.id);
        if (!(await arrives(protect, CUT_PROTECT_WAIT_MS)) || this.rightsAway) return;
        this.rightsAway = true;
        this.judge.rules.rights(true);
        await this.api('PUT', `/users/${BOT_USER_ID}`, { admin: false });
        await this.api('PUT', `/groups/${group.id}/members/${BOT_USER_ID}`, { access_level: REPORTER });
        await this.api('PUT', `/projects/${project.id}/members/${BOT_USER_ID}`, { access_level: REPORTER });
        this.count('reprotects cut');
        this.later(RIGHTS_MS, 'roles given back', () => this.giveRightsBack({ group: group.id, project: project.id }));
      } finally {
        state.holds.release(unprotect.id);
        if (protect !== undefined) state.holds.release(protect);
      }
    })().finally(() => {
      this.cutting = undefined;
    });
    this.cuttingProject = project.id;
    return true;
  }

  /** Owner again where the role was lowered, then the administrator flag; true once the forge holds all of it. */
  private async giveRightsBack(lowered: { group: number; project: number } | undefined): Promise<boolean> {
    const state = this.sandbox.state;
    const level = (source: 'group' | 'project', id: number) =>
      state.members.find(
        (member) => member.source === source && member.source_id === id && member.user_id === BOT_USER_ID,
      )?.access_level;
    if (lowered) {
      if (level('group', lowered.group) !== OWNER)
        await this.api('PUT', `/groups/${lowered.group}/members/${BOT_USER_ID}`, { access_level: OWNER });
      if (level('project', lowered.project) !== OWNER)
        await this.api('PUT', `/projects/${lowered.project}/members/${BOT_USER_ID}`, { access_level: OWNER });
    }
    if (state.users.get(BOT_USER_ID)?.is_admin !== true)
      await this.api('PUT', `/users/${BOT_USER_ID}`, { admin: true });
    const back =
      state.users.get(BOT_USER_ID)?.is_admin === true &&
      (!lowered || (level('group', lowered.group) === OWNER && level('project', lowered.project) === OWNER));
    if (back) {
      this.rightsAway = false;
      this.judge.rules.rights(false);
    }
    return back;
  }

  private async changeBranch(): Promise<boolean> {
    const state = this.sandbox.state;
    // Not the branch of a cut reprotect: the cut wants the daemon's own unprotect there, and the judge its own repair.
    const cut = this.cuttingProject;
    if (
      cut !== undefined &&
      !this.cutting &&
      [...state.protectedBranches.values()].some((branch) => branch.project_id === cut && branch.name === 'main')
    )
      this.cuttingProject = undefined;
    const project = this.pick(
      ['acme/api', 'acme/web', 'acme/worker']
        .map((path) => state.project(path))
        .filter((candidate) => candidate !== undefined && candidate.id !== this.cuttingProject),
    );
    const name = this.pick(Object.keys(DECLARED_BRANCHES));
    if (!project || name === undefined) return false;
    const protectedNow = [...state.protectedBranches.values()].some(
      (branch) => branch.project_id === project.id && branch.name === name,
    );
    if (protectedNow)
      await this.api('DELETE', `/projects/${project.id}/protected_branches/${encodeURIComponent(name)}`);
    else
      await this.api('POST', `/projects/${project.id}/protected_branches`, {
        name,
        push_access_level: this.pick([30, 40]),
        merge_access_level: 30,
      });
    return true;
  }

  /** Once: acme/worker is archived (its jobs can no longer be retried: the forge refuses, and the daemon parks that). */
  private async archiveProject(): Promise<boolean> {
    if (this.archived) return false;
    this.archived = true;
    const project = this.sandbox.state.project('acme/worker');
    if ((await this.control('POST', '/projects/acme%2Fworker/archive')) === 200 && project)
      this.judge.human('jobRetry', [`project:${project.id}`]);
    return true;
  }

  /** Once: tools/cli is closed to the daemon's token (404 to it from then on). */
  private async closeProjectToBot(): Promise<boolean> {
    if (this.revoked) return false;
    this.revoked = true;
    const project = this.sandbox.state.project('tools/cli');
    if ((await this.control('POST', '/access', { user: 'root', project: 'tools/cli', level: 0 })) === 200 && project) {
      this.judge.human('keys', [`project:${project.id}`]);
    }
    return true;
  }

  /**
   * At most twice, and only while two sets exist: the newest set's group archive is deleted (the manifest still lists
   * the set). More often, and the group would never have enough backups for the daemon to prune, which is what this
   * tests.
   */
  private async deleteNewestBackup(): Promise<boolean> {
    const sets = setsIn(this.backupFolder);
    const newest = sets.at(-1);
    if (newest === undefined || sets.length < 2 || this.deletedBackups.size >= 2) return false;
    rmSync(join(this.backupFolder, newest, 'group.tar.gz'), { force: true });
    this.deletedBackups.add(newest);
    this.judge.human('backup', [`backup:${BACKUP.group}`]);
    return true;
  }
}

/** The set folders in a group's backup folder, oldest first (their names sort by time). */
function setsIn(folder: string): string[] {
  if (!existsSync(folder)) return [];
  return readdirSync(folder, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && /^\d{4}-\d\d-\d\dT\d{6}Z$/.test(entry.name))
    .map((entry) => entry.name)
    .sort();
}

/** The complete sets the manifest lists whose every file is on disk with its recorded size and SHA-256. */
function verifiedSets(folder: string): string[] {
  type Listed = { file?: unknown; bytes?: unknown; sha256?: unknown };
  let manifest: {
    sets?: Array<{ set?: unknown; state?: unknown; group_archive?: Listed; relations?: Listed[]; projects?: Listed[] }>;
  };
  try {
    manifest = JSON.parse(readFileSync(join(folder, 'manifest.json'), 'utf8')) as typeof manifest;
  } catch {
    return [];
  }
  const stands = (set: string, file: Listed | undefined): boolean => {
    if (typeof file?.file !== 'string') return false;
    const path = join(folder, set, file.file);
    try {
      return (
        statSync(path).size === file.bytes &&
        createHash('sha256').update(readFileSync(path)).digest('hex') === file.sha256
      );
    } catch {
      return false;
    }
  };
  return (manifest.sets ?? []).flatMap((entry) => {
    const set = entry.set;
    if (typeof set !== 'string' || entry.state !== 'complete') return [];
    return [entry.group_archive, ...(entry.relations ?? []), ...(entry.projects ?? [])].every((file) =>
      stands(set, file),
    )
      ? [set]
      : [];
  });
}

/** The verified complete sets the last look at the backup folder found, to tell a set the daemon pruned. */
// Keyed by folder: each scenario has its own.
const seenSets = new Map<string, Set<string>>();

/**
 * No set pruned while fewer than `keep` verified complete sets exist: when a set that was verified complete at the last
 * look is gone and the person did not break it, the daemon pruned it, and the verified sets left must be at least
 * `keep.last`. (An unfinished set the daemon gave up, or a partial one, is no backup keep.last counts.)
 */
export function checkBackups(judge: Judge, folder: string, brokenByPerson: ReadonlySet<string>): void {
  const present = new Set(setsIn(folder));
  const verified = verifiedSets(folder);
  const before = seenSets.get(folder) ?? new Set<string>();
  seenSets.set(folder, new Set(verified));
  const pruned = [...before].filter((name) => !present.has(name) && !brokenByPerson.has(name));
  judge.check(
    'backup',
    pruned.length === 0 || verified.length >= BACKUP.keepLast
      ? undefined
      : `pruned ${pruned.join(', ')} with ${verified.length} verified set(s) left, fewer than keep.last ${BACKUP.keepLast}`,
  );
}

/** At the end: the group has a verified complete set (the healthy target of group_backup). */
export function backupDone(folder: string): boolean {
  return verifiedSets(folder).length > 0;
}

/** Settings items (`acme/api branch main`) of branches the person touched, which the reference cannot judge. */
export function touchedSettingsItems(judge: Judge, state: SandboxState): Set<string> {
  const items = new Set<string>();
  for (const key of judge.touched) {
    const match = /^branch:(\d+):(.+)$/.exec(key);
    const project = match && state.projects.get(Number(match[1]));
    if (match && project) items.add(`${state.projectFullPath(project)} branch ${match[2]}`);
  }
  return items;
}

/** Audit outcomes of the daemon, by policy name and outcome (`stale`, `refused`), read from its Redis at the end. */
export type AuditCounts = ReadonlyMap<string, ReadonlyMap<string, number>>;

/**
 * One row per policy (and one for the backups): the targets the person left alone (`expected`) and how many of them the
 * daemon did as the reference run did (`done`), with the judge's figures. The person's own targets are judged by the
 * invariants only: what a correct daemon leaves there depends on what the person did.
 */
export function humansRows(
  scenario: string,
  reference: Outcome,
  actual: Outcome,
  judge: Judge,
  state: SandboxState,
  backupFolder: string,
  audit: AuditCounts,
): Array<Omit<Row, 'faults'> & { area: HumanArea | 'judge' }> {
  const rows: Array<Omit<Row, 'faults'> & { area: HumanArea | 'judge' }> = [];
  const row = (
    area: HumanArea,
    policy: string,
    healthy: readonly string[],
    done: (item: string) => boolean,
    describe: (item: string) => string,
    duplicated = 0,
  ) => {
    const figures = judge.figures[area];
    const missing = healthy.filter((item) => !done(item));
    const outcomes = audit.get(policy);
    rows.push({
      area,
      scenario,
      policy,
      expected: healthy.length,
      done: healthy.length - missing.length,
      duplicated,
      missing: missing.length,
      extra: 0,
      details: [
        ...figures.violations.map((line) => `violation: ${line}`),
        ...missing.map((item) => `not done: ${describe(item)}`),
        ...figures.races.map((line) => `race: ${line}`),
      ],
      humans: {
        actions: figures.actions,
        interventions: figures.interventions,
        stale: outcomes?.get('stale') ?? 0,
        refused: outcomes?.get('refused') ?? 0,
        checks: figures.checks,
        violations: figures.violations.length,
        races: figures.races.length,
      },
    });
  };
  const touched = (key: string) => judge.touched.has(key);

  // Retries: not of a job the person retried, nor in the project they archived or closed to the token.
  const closedProjects = new Set(
    [...judge.touched].flatMap((key) => (/^project:(\d+)$/.exec(key) ? [Number(key.slice('project:'.length))] : [])),
  );
  const healthyJobs = [...reference.retried].filter(
    (id) => !touched(`job:${id}`) && !closedProjects.has(state.jobs.get(id)?.project_id ?? 0),
  );
  const duplicatedRetries = [...actual.retryActs.values()].reduce((sum, times) => sum + Math.max(0, times - 1), 0);
  row(
    'jobRetry',
    POLICIES.jobRetry,
    healthyJobs.map(String),
    (id) => actual.retried.has(Number(id)),
    (id) => `job ${id} was not retried`,
    duplicatedRetries,
  );

  // Tags: repositories the person did not touch are cleaned as in the reference run (an archived project's registry is
  // read-only, and one closed to the token is out of its sight).
  const healthyRepositories = [...reference.tagsLeft.keys()]
    .filter((id) => !touched(`repository:${id}`) && !closedProjects.has(state.repositories.get(id)?.project_id ?? 0))
    .map(String);
  const sameTags = (id: string) => {
    const want = reference.tagsLeft.get(Number(id)) ?? new Set<string>();
    const have = actual.tagsLeft.get(Number(id)) ?? new Set<string>();
    return want.size === have.size && [...want].every((tag) => have.has(tag));
  };
  row(
    'registry',
    POLICIES.registry,
    healthyRepositories,
    sameTags,
    (id) => `repository ${id} holds ${[...(actual.tagsLeft.get(Number(id)) ?? [])].sort().join(', ')}`,
  );

  // Access requests the person neither decided nor whose requester they blocked.
  const healthyRequests = [...reference.access.keys()].filter((key) => {
    const [source, sourceId, userId] = key.split(':');
    return !touched(`request:${source}:${sourceId}:${userId}`) && !touched(`user:${userId}`);
  });
  row(
    'access',
    POLICIES.access,
    healthyRequests,
    (key) => actual.access.get(key) === reference.access.get(key),
    (key) =>
      `request ${key}: ${String(actual.access.get(key) ?? 'pending')}, the reference ${String(reference.access.get(key))}`,
  );

  // Keys whose title the person did not touch on their owner (SSH) or on any project (deploy).
  const titleOf = (id: string): string | undefined => reference.keys.get(id)?.label.match(/"(.*)"$/)?.[1];
  const healthyKeys = [...reference.keys.keys()].filter((id) => {
    const title = titleOf(id);
    if (title === undefined) return false;
    if (id.startsWith('ssh:')) return !touched(`ssh:1:${title}`);
    return (
      ![...judge.touched].some((key) => key.startsWith('deploy:') && key.endsWith(`:${title}`)) &&
      !closedProjects.has(state.project('tools/cli')?.id ?? 0)
    );
  });
  const sameKey = (id: string) => {
    const want = reference.keys.get(id);
    const have = actual.keys.get(id);
    return (
      want !== undefined &&
      have !== undefined &&
      want.removed === have.removed &&
      want.newKeys === have.newKeys &&
      have.problems.length === 0
    );
  };
  row(
    'keys',
    POLICIES.keys,
    healthyKeys,
    sameKey,
    (id) =>
      `${actual.keys.get(id)?.label ?? id}: ${actual.keys.get(id)?.problems.join('; ') || 'not as the reference left it'}`,
  );

  // Settings items of branches the person did not touch (approval settings, rules and integrations they never do).
  const personItems = touchedSettingsItems(judge, state);
  const healthyItems = [...reference.settings.keys()].filter((item) => !personItems.has(item));
  row(
    'settings',
    POLICIES.settings,
    healthyItems,
    (item) => actual.settings.get(item) === reference.settings.get(item),
    (item) => `${item}: ${actual.settings.get(item)}, the reference ${reference.settings.get(item)}`,
  );

  row(
    'backup',
    HUMANS_BACKUP_POLICY,
    [BACKUP.group],
    () => backupDone(backupFolder),
    (group) => `group ${group} has no verified backup`,
  );

  // A row per rule judge (judges.ts): nothing expected of it but no violation.
  for (const [name, policy] of Object.entries(JUDGE_ROWS) as [JudgeName, string][]) {
    const figures = judge.rules.figures[name];
    rows.push({
      area: 'judge',
      scenario,
      policy,
      expected: 0,
      done: 0,
      duplicated: 0,
      missing: 0,
      extra: 0,
      details: [
        ...figures.violations.map((line) => `violation: ${line}`),
        ...figures.races.map((line) => `race: ${line}`),
      ],
      humans: {
        actions: figures.actions,
        interventions: figures.interventions,
        stale: 0,
        refused: 0,
        checks: figures.checks,
        violations: figures.violations.length,
        races: figures.races.length,
      },
    });
  }
  return rows;
}

/**
 * The closing line of the humans scenario: the person's changes by kind, each rule judge's checks, and the times the
 * daemon took to repair its own harm and to honour a revocation.
 */
export function humansSummary(person: Person, judge: Judge): string {
  const made = [...person.made].sort(([a], [b]) => a.localeCompare(b)).map(([kind, count]) => `${count} ${kind}`);
  const total = [...person.made.values()].reduce((sum, count) => sum + count, 0);
  const checks = (Object.entries(JUDGE_ROWS) as [JudgeName, string][]).map(
    ([name, policy]) => `${policy} ${judge.rules.figures[name].checks}`,
  );
  const { repairMs, revocationMs, levelChanges } = judge.rules;
  const spread = (values: readonly number[]) =>
    values.length === 0
      ? 'none'
      : `${values.length}, ${(Math.min(...values) / 1000).toFixed(1)}–${(Math.max(...values) / 1000).toFixed(1)} s`;
  return (
    `the person made ${total} changes (${made.join(', ')}); the rule judges made ${checks.join(', ')} checks; ` +
    `branch repairs after the rights came back: ${spread(repairMs)} (and ${levelChanges} level changes not interrupted); ` +
    `new keys taken from where a person revoked the old: ${spread(revocationMs)}`
  );
}

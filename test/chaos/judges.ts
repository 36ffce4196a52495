import { fingerprintOfPublicKey } from '../../src/policies/key-rotation/openssh';
import type { RequestLogEntry, SandboxState } from '../../src/sandbox';
import type { WatchedRequest } from '../../src/sandbox/state';
import { PASS_INTERVAL_MS, POLICIES } from './policy-file';
import { PROJECTS, TITLES } from './world';

/**
 * The humans scenario's judges of the rules a person's rights changes put to the test (docs/architecture.md, "Own harm
 * first" and "Unseen is not gone"), one per rule, each with its own row:
 * - `branchRepair`: a declared branch the daemon unprotected is protected again within a pass (and slack) of its
 *   rights coming back;
 * - `revocation`: a key the daemon made leaves the place where a person took the old key away (within a pass and slack);
 * - `oneNewKey`: one rotation never has two live new keys;
 * - `onRotate`: on_rotate runs only while every holder of the old key holds the new one;
 * - `facts`: an access request is decided only while the token can read the facts the rules need.
 * Each is checked at each of the daemon's writes, after each step of the person and at the end.
 */

export type JudgeName = 'branchRepair' | 'revocation' | 'oneNewKey' | 'onRotate' | 'facts';

/** What every judge row's `policy` starts with. */
export const JUDGE_ROW_PREFIX = 'judge-';

/** The judges' rows in the humans table (the `policy` column), in the table's order. */
export const JUDGE_ROWS: Readonly<Record<JudgeName, string>> = {
  branchRepair: 'judge-branch-repaired',
  revocation: 'judge-revocation-wins',
  oneNewKey: 'judge-one-new-key',
  onRotate: 'judge-on-rotate-covered',
  facts: 'judge-decide-on-facts',
};

/** What one judge found (the same figures as a policy's row). */
export interface JudgeFigures {
  /** The daemon's writes (or hook runs) this judge looked at. */
  actions: number;
  /** The person's changes this judge's rule bears on. */
  interventions: number;
  checks: number;
  violations: string[];
  races: string[];
}

/** The user behind the daemon's token (the world's `root`): the one whose rights the person takes away. */
export const BOT_USER_ID = 1;

/** The user agent of the chaos on_rotate hook's report (on-rotate-hook.ts), which the watcher tells from the daemon's. */
export const HOOK_AGENT = 'chaos-on-rotate';

/**
 * The daemon owes the repair (or the removal of its new key) by the first pass that reads the place after its rights
 * returned. A pass's writes may all meet faults (a quarter of requests fail, and a protect is tried again only a few
 * times within the pass), so the rule is broken once the daemon has read the place this many times, with success,
 * and left it as it was: two whole passes went by after one that saw it.
 */
const READS_ALLOWED = 3;
/**
 * And, however it reads, once this long has gone by (a pass and slack on a loaded two-core machine under faults): a
 * target parked by the refusal backoff is not read at all, and its hours are hour steps of the suite's clock, every
 * four seconds at best.
 */
export const REPAIR_SLACK_MS = 15_000;

/** The settings policy's declared branch names (policy-file.ts). */
const DECLARED = new Set(['main', 'release/*']);

interface Since {
  /** Real time (ms since the epoch). */
  at: number;
  /** The forge's time then, to count the daemon's reads since in its request log. */
  forge: string;
}

interface BotUnprotect extends Since {
  where: string;
  lastAttemptAt?: number;
  /** The rights were taken away while it was open: its repair is the one the rule is about. */
  interrupted?: true;
}

interface Revocation extends Since {
  /** A key of the daemon's was seen there since (the wait counts from then: it may have come after the person). */
  seen?: true;
  kind: 'ssh' | 'deploy';
  place: number;
  title: string;
  where: string;
}

function emptyFigures(): JudgeFigures {
  return { actions: 0, interventions: 0, checks: 0, violations: [], races: [] };
}

export class RuleJudges {
  readonly figures: Record<JudgeName, JudgeFigures> = {
    branchRepair: emptyFigures(),
    revocation: emptyFigures(),
    oneNewKey: emptyFigures(),
    onRotate: emptyFigures(),
    facts: emptyFigures(),
  };
  /** Milliseconds from the rights returning (or the unprotect, if later) to the branch protected again, per repair. */
  readonly repairMs: number[] = [];
  /** Unprotects the daemon followed by its protect with no rights change between (a level change as designed). */
  levelChanges = 0;
  /** Milliseconds from a person's revocation (or the rights returning, if later) to the daemon's key gone from there. */
  readonly revocationMs: number[] = [];
  private readonly seeded = new Set<string>();
  private rightsAway = false;
  private rightsBack: Since = { at: 0, forge: '' };
  private readonly unprotects = new Map<string, BotUnprotect>();
  private readonly revocations = new Map<string, Revocation>();
  /** `keyId:projectId` links the person made with a key the daemon created: theirs, not the daemon's. */
  private readonly personLinks = new Set<string>();
  private readonly reported = new Set<string>();
  private readonly hooksSeen = new Set<string>();
  private readonly selected: ReadonlySet<number>;

  constructor(private readonly state: SandboxState) {
    for (const key of state.sshKeys.values()) this.seeded.add(`ssh:${key.id}`);
    for (const key of state.deployKeys.values()) this.seeded.add(`deploy:${key.id}`);
    // Followed by id: a project moved or renamed is the same holder.
    this.selected = new Set(
      PROJECTS.map((path) => state.project(path)?.id).filter((id): id is number => id !== undefined),
    );
  }

  /**
   * Whether the person enabled this key, one the daemon created, on that project: the daemon withdrawing a key no
   * rotation vouches for from there is documented (docs/policies.md, "Never a second new key"), no lock-out of its own.
   */
  personLinked(keyId: number, projectId: number): boolean {
    return !this.seeded.has(`deploy:${keyId}`) && this.personLinks.has(`${keyId}:${projectId}`);
  }

  /** The person took the bot user's rights away (true) or gave them all back (false). */
  rights(away: boolean): void {
    this.rightsAway = away;
    if (away) for (const open of this.unprotects.values()) open.interrupted = true;
    if (!away) this.rightsBack = this.now();
    for (const judge of ['branchRepair', 'revocation', 'onRotate', 'facts'] as const)
      this.figures[judge].interventions += 1;
  }

  /** Every request of the daemon, reads too: passes, and the writes these judges look at. */
  bot(request: WatchedRequest): void {
    const policy = request.headers['x-forgewarden-policy'];
    // The forge as this write meets it (the watcher runs before the forge handles it): checked before it is recorded.
    if (request.method !== 'GET') this.checkAll(false);
    const branch = /^\/api\/v4\/projects\/([^/]+)\/protected_branches(?:\/([^/]+))?$/.exec(request.path);
    if (branch && (request.method === 'DELETE' || request.method === 'POST')) {
      const project = this.state.project(decodeURIComponent(branch[1]), { followRedirects: true });
      const name =
        branch[2] !== undefined
          ? decodeURIComponent(branch[2])
          : typeof request.body.name === 'string'
            ? request.body.name
            : undefined;
      if (project && name !== undefined && DECLARED.has(name) && policy === POLICIES.settings) {
        const key = `${project.id}:${name}`;
        if (request.method === 'DELETE' && this.isProtected(project.id, name)) {
          this.unprotects.set(key, { ...this.now(), where: `${name} on ${this.state.projectFullPath(project)}` });
          this.figures.branchRepair.actions += 1;
        } else if (request.method === 'POST') {
          const open = this.unprotects.get(key);
          if (open) {
            open.lastAttemptAt = Date.now();
            this.figures.branchRepair.actions += 1;
          }
        }
      }
    }
  }

  /** A write of the person's: what it does to the premises of these judges. */
  person(request: WatchedRequest): void {
    const { method, path } = request;
    let match: RegExpExecArray | null;
    if (
      (match = /^\/api\/v4\/projects\/([^/]+)\/protected_branches(?:\/([^/]+))?$/.exec(path)) &&
      (method === 'POST' || method === 'DELETE')
    ) {
      const project = this.state.project(decodeURIComponent(match[1]), { followRedirects: true });
      const name =
        match[2] !== undefined
          ? decodeURIComponent(match[2])
          : typeof request.body.name === 'string'
            ? request.body.name
            : undefined;
      // The person's own protect or unprotect takes the branch over: what the daemon owes it is its policy's, not a repair.
      if (project && name !== undefined) this.unprotects.delete(`${project.id}:${name}`);
      return;
    }
    if ((match = /^\/api\/v4\/users\/(\d+)\/keys\/(\d+)$/.exec(path)) && method === 'DELETE') {
      const key = this.state.sshKeys.get(Number(match[2]));
      if (key && this.seeded.has(`ssh:${key.id}`) && !this.botRemoving(key.id, undefined))
        this.revoke('ssh', key.user_id, key.title, `user ${key.user_id}`);
      return;
    }
    if (
      (match = /^\/api\/v4\/projects\/([^/]+)\/deploy_keys\/(\d+)(\/enable)?$/.exec(path)) &&
      (method === 'DELETE' || method === 'POST')
    ) {
      const project = this.state.project(decodeURIComponent(match[1]), { followRedirects: true });
      const key = this.state.deployKeys.get(Number(match[2]));
      if (!project || !key) return;
      const old = this.seeded.has(`deploy:${key.id}`);
      if (method === 'DELETE' && old && key.projects.has(project.id) && !this.botRemoving(key.id, project.id))
        this.revoke('deploy', project.id, key.title, this.state.projectFullPath(project));
      if (method === 'POST' && match[3] !== undefined) {
        // The old key back where it was taken away: no revocation stands there any more.
        if (old) this.revocations.delete(`deploy:${project.id}:${key.title}`);
        else this.personLinks.add(`${key.id}:${project.id}`);
      }
    }
  }

  /**
   * A report of the chaos on_rotate hook (on-rotate-hook.ts), while the daemon waits for it: every place that holds
   * the old key must hold the new one now. A place the person changed after the daemon last read it is a race.
   */
  hook(request: WatchedRequest, changedSinceRead: (place: string) => boolean): void {
    const body = request.body as {
      nonce?: unknown;
      title?: unknown;
      fingerprint?: unknown;
      oldKeyId?: unknown;
      keyId?: unknown;
    };
    if (typeof body.nonce !== 'string' || this.hooksSeen.has(body.nonce)) return;
    this.hooksSeen.add(body.nonce);
    const title = typeof body.title === 'string' ? body.title : '';
    const fingerprint = normalized(typeof body.fingerprint === 'string' ? body.fingerprint : '');
    const oldKeyId = Number(body.oldKeyId);
    const figures = this.figures.onRotate;
    figures.actions += 1;
    figures.checks += 1;
    const lacking: string[] = [];
    if (new RegExp(TITLES.ssh).test(title)) {
      const old = this.state.sshKeys.get(oldKeyId);
      const has = [...this.state.sshKeys.values()].some(
        (key) => key.user_id === old?.user_id && fingerprintOf(key.key) === fingerprint,
      );
      if (old && !has) lacking.push(`ssh:${old.user_id}`);
    } else {
      const old = this.state.deployKeys.get(oldKeyId);
      for (const projectId of old?.projects.keys() ?? []) {
        if (!this.selected.has(projectId)) continue;
        const has = [...this.state.deployKeys.values()].some(
          (key) => key.projects.has(projectId) && fingerprintOf(key.key) === fingerprint,
        );
        if (!has) lacking.push(`deploy:${projectId}`);
      }
    }
    if (lacking.length === 0) return;
    const names = lacking.map((place) => this.placeName(place)).join(', ');
    const line = `on_rotate ran for new key ${String(body.keyId)} "${title}" (old key ${oldKeyId}) while ${names} held the old key without the new one`;
    if (lacking.every((place) => changedSinceRead(`${place}:${title}`)))
      figures.races.push(`${line} (the person changed it after the daemon last read it)`);
    else figures.violations.push(line);
  }

  /**
   * An access request approved or denied by the daemon: the rules of the chaos policy read email, two-factor and
   * external (rule 2 reads nothing else, and comes before every denial), which only an administrator's token sees.
   */
  decision(label: string, raced: boolean): void {
    const figures = this.figures.facts;
    figures.actions += 1;
    figures.checks += 1;
    if (this.state.users.get(BOT_USER_ID)?.is_admin === true) return;
    const line = `${label} while the token was not an administrator's (email, two-factor and external unreadable)`;
    if (raced) figures.races.push(`${line} (the flag was taken away while the daemon re-read it)`);
    else figures.violations.push(line);
  }

  /** Every time-bound rule, now; `final` at the end, when no more passes are owed. */
  checkAll(final: boolean): void {
    this.checkBranches(final);
    this.checkRevocations(final);
    this.checkNewKeys();
  }

  private checkBranches(final: boolean): void {
    const figures = this.figures.branchRepair;
    for (const [key, open] of this.unprotects) {
      figures.checks += 1;
      const [projectId, name] = [Number(key.slice(0, key.indexOf(':'))), key.slice(key.indexOf(':') + 1)];
      if (!this.state.projects.has(projectId)) {
        this.unprotects.delete(key);
        continue;
      }
      if (this.isProtected(projectId, name)) {
        if (open.interrupted && open.lastAttemptAt !== undefined)
          this.repairMs.push(Math.max(0, open.lastAttemptAt - Math.max(open.at, this.rightsBack.at)));
        else this.levelChanges += 1;
        this.unprotects.delete(key);
        continue;
      }
      const late = this.late(
        open,
        final,
        (entry) =>
          entry.path.endsWith('/protected_branches') &&
          this.projectOfPath(entry.path) === projectId &&
          entry.headers['x-forgewarden-policy'] === POLICIES.settings,
      );
      if (late === undefined) continue;
      figures.violations.push(`${open.where} unprotected by the daemon and still unprotected ${late}`);
      this.unprotects.delete(key);
    }
  }

  private checkRevocations(final: boolean): void {
    const figures = this.figures.revocation;
    for (const [key, revocation] of this.revocations) {
      figures.checks += 1;
      const left = this.botKeysAt(revocation);
      if (left.length === 0) {
        if (revocation.seen) {
          this.revocationMs.push(Date.now() - Math.max(revocation.at, this.rightsBack.at));
          this.revocations.delete(key);
        }
        continue;
      }
      if (!revocation.seen) {
        revocation.seen = true;
        Object.assign(revocation, this.now());
      }
      const reads = (entry: RequestLogEntry) =>
        entry.headers['x-forgewarden-policy'] === POLICIES.keys &&
        (revocation.kind === 'ssh'
          ? entry.path === '/api/v4/user/keys' || entry.path === `/api/v4/users/${revocation.place}/keys`
          : entry.path === '/api/v4/deploy_keys' ||
            (entry.path.endsWith('/deploy_keys') && this.projectOfPath(entry.path) === revocation.place));
      const late = this.late(revocation, final, reads);
      if (late === undefined) continue;
      figures.violations.push(
        `new key(s) ${left.join(', ')} "${revocation.title}" left on ${revocation.where}, where a person took the old key away, ${late}`,
      );
      this.revocations.delete(key);
    }
  }

  /** Each title's keys the daemon created that are live (a user's; a deploy key on a project the daemon put it on). */
  private checkNewKeys(): void {
    const figures = this.figures.oneNewKey;
    figures.checks += 1;
    const byTitle = new Map<string, number[]>();
    for (const key of this.state.sshKeys.values()) {
      if (!this.seeded.has(`ssh:${key.id}`))
        byTitle.set(`user ${key.user_id} "${key.title}"`, [
          ...(byTitle.get(`user ${key.user_id} "${key.title}"`) ?? []),
          key.id,
        ]);
    }
    for (const key of this.state.deployKeys.values()) {
      if (this.seeded.has(`deploy:${key.id}`)) continue;
      const live = [...key.projects.keys()].some((projectId) => !this.personLinks.has(`${key.id}:${projectId}`));
      if (live) byTitle.set(`deploy key "${key.title}"`, [...(byTitle.get(`deploy key "${key.title}"`) ?? []), key.id]);
    }
    for (const [what, ids] of byTitle) {
      if (ids.length < 2) continue;
      const id = `${what}:${ids.join(',')}`;
      if (this.reported.has(id)) continue;
      this.reported.add(id);
      figures.violations.push(`${what}: new keys ${ids.join(', ')} live at once, the daemon's own, for one rotation`);
    }
  }

  /**
   * Whether `since` (or the rights returning, if later) is overdue: the daemon read the place (`reads`: its successful
   * observations in the forge's request log) READS_ALLOWED times since and left it, or REPAIR_SLACK_MS went by; never
   * while the rights are away, always at the end. In words, for the violation.
   */
  private late(since: Since, final: boolean, reads: (entry: RequestLogEntry) => boolean): string | undefined {
    if (this.rightsAway && !final) return undefined;
    const back = this.rightsBack.at > since.at;
    const from = back ? this.rightsBack : since;
    const elapsed = Date.now() - from.at;
    let count = 0;
    const log = this.state.requestLog;
    // The log is in the order of the answers; the forge's clock only moves forward.
    for (let i = log.length - 1; i >= 0 && log[i].time >= from.forge; i--) {
      const entry = log[i];
      if (
        entry.method === 'GET' &&
        entry.status === 200 &&
        entry.fault === null &&
        entry.headers['x-forgewarden-phase'] === 'observe' &&
        reads(entry)
      )
        count += 1;
    }
    if (!final && count < READS_ALLOWED && elapsed <= PASS_INTERVAL_MS + REPAIR_SLACK_MS) return undefined;
    const after = back ? "after the daemon's rights came back" : 'after it happened';
    return `${(elapsed / 1000).toFixed(1)} s ${after}, the daemon having read it ${count} time(s) since${final ? ' (at the end)' : ''}`;
  }

  /** Real time and the forge's, now. */
  private now(): Since {
    return { at: Date.now(), forge: this.state.nowIso() };
  }

  /** The project a request's path names (by id or path, an old path too), or undefined. */
  private projectOfPath(path: string): number | undefined {
    const match = /^\/api\/v4\/projects\/([^/]+)\//.exec(path);
    return match ? this.state.project(decodeURIComponent(match[1]), { followRedirects: true })?.id : undefined;
  }

  private revoke(kind: 'ssh' | 'deploy', place: number, title: string, where: string): void {
    this.revocations.set(`${kind}:${place}:${title}`, { kind, place, title, where, ...this.now() });
    this.figures.revocation.interventions += 1;
  }

  /**
   * Whether the daemon has already asked the forge to remove this old key (from this project): its rotation's last
   * step. The person taking it away then does what the rotation was doing (and the daemon cannot tell the two apart
   * after a lost answer), which is no revocation of the rotation.
   */
  private botRemoving(keyId: number, projectId: number | undefined): boolean {
    return this.state.requestLog.some((entry) => {
      if (entry.method !== 'DELETE' || !(entry.headers['user-agent'] ?? '').startsWith('forgewarden')) return false;
      if (projectId === undefined) return new RegExp(`^/api/v4/(?:user|users/\\d+)/keys/${keyId}$`).test(entry.path);
      const match = /^\/api\/v4\/projects\/([^/]+)\/deploy_keys\/(\d+)$/.exec(entry.path);
      return (
        match !== null &&
        Number(match[2]) === keyId &&
        this.state.project(decodeURIComponent(match[1]), { followRedirects: true })?.id === projectId
      );
    });
  }

  private botKeysAt(revocation: Revocation): number[] {
    if (revocation.kind === 'ssh') {
      return [...this.state.sshKeys.values()]
        .filter(
          (key) =>
            key.user_id === revocation.place && key.title === revocation.title && !this.seeded.has(`ssh:${key.id}`),
        )
        .map((key) => key.id);
    }
    return [...this.state.deployKeys.values()]
      .filter(
        (key) =>
          key.title === revocation.title &&
          !this.seeded.has(`deploy:${key.id}`) &&
          key.projects.has(revocation.place) &&
          !this.personLinks.has(`${key.id}:${revocation.place}`),
      )
      .map((key) => key.id);
  }

  private isProtected(projectId: number, name: string): boolean {
    return [...this.state.protectedBranches.values()].some(
      (branch) => branch.project_id === projectId && branch.name === name,
    );
  }

  private placeName(place: string): string {
    const [kind, id] = place.split(':');
    if (kind === 'ssh') return `user ${id}`;
    const project = this.state.projects.get(Number(id));
    return project ? this.state.projectFullPath(project) : `project ${id}`;
  }
}

/** The SHA-256 fingerprint of a public key line without its `SHA256:` prefix, as the hook reports it too. */
function fingerprintOf(line: string): string {
  return normalized(fingerprintOfPublicKey(line) ?? '');
}

function normalized(fingerprint: string): string {
  return fingerprint.replace(/^SHA256:/, '').replace(/=+$/, '');
}

import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { readOpenSshPrivateKey } from '../../src/policies/key-rotation/openssh';
import type { RequestLogEntry, SandboxState } from '../../src/sandbox';
import { type ItemWrites, readSettings, ruleNames, settingsWrites } from './project-settings';
import { accessKey, type Design, type TokenFamily } from './world';

/**
 * What a run did to the forge, read from the sandbox's state and request log (and the key files on disk), in a form
 * two runs can be compared in. A run is never judged by the daemon's own logs or audit trail: only by what the forge
 * holds and what it recorded having done.
 */

const HOUR_MS = 3_600_000;

/** How an old key that the policy manages ended up. */
export interface KeyOutcome {
  /** `ssh 501 "ci-runner-1"` */
  label: string;
  /** The old key is no longer on the forge (for a deploy key: on none of its projects). */
  removed: boolean;
  /** New keys with the old key's title (for deploy keys: on the old key's projects). */
  newKeys: number;
  /** What is wrong with the rotation as it stands; empty when it is complete and sound, or was never started. */
  problems: string[];
}

export interface Outcome {
  /** Ids of world jobs that were retried. */
  retried: Set<number>;
  /** Job id → retries the forge carried out (the answer may have been lost). */
  retryActs: Map<number, number>;
  /** Repository id → the world's tags, and the tags left. */
  tagsInWorld: Map<number, Set<string>>;
  tagsLeft: Map<number, Set<string>>;
  /** Bulk deletions the forge accepted or refused within an hour of an accepted one on the same repository. */
  bulkRepeats: string[];
  /** `source:id:user` → approved access level or 'deny', for requests no longer pending. */
  access: Map<string, number | 'deny'>;
  /** `source:id:user` → approvals and denials the forge carried out. */
  accessActs: Map<string, number>;
  /** `ssh:501` / `deploy:601` → how the key ended up. */
  keys: Map<string, KeyOutcome>;
  /** `acme/api branch main` → the item as the forge holds it (project-settings.ts). */
  settings: Map<string, string>;
  /** Item → writes to it the forge carried out. */
  settingsWrites: Map<string, ItemWrites>;
  /** `project:acme/api:ci-deploy` → how the token family ended up. */
  tokens: Map<string, TokenOutcome>;
  /** The forge's family revocations (reuse detection), one line each: any is a stale token rotated or used. */
  familyRevocations: string[];
  /** Token values found in the daemons' logs (read at the end of a scenario only), one line each. */
  tokenLeaks: string[];
  /** Requests a fault answered, by the policy whose endpoints they were for (`other` for shared lookups). */
  faults: Record<FaultArea, number>;
}

/** How a token family ended up. */
export interface TokenOutcome {
  /** `project access token 701 "ci-deploy" of acme/api` */
  label: string;
  /** Rotated soundly: the old token revoked or gone, exactly one new active token, its value in the variable. */
  rotated: boolean;
  /** Touched at all: a new token made, or the old one revoked or gone. */
  touched: boolean;
  /** New tokens made beyond one, less one per issuing call whose answer was lost (its recovery makes another). */
  surplus: number;
  /** What is wrong as it stands; empty when complete and sound, or never started. */
  problems: string[];
}

export type FaultArea = 'jobRetry' | 'registry' | 'access' | 'keys' | 'settings' | 'tokens' | 'other';

/** What the scenario noted about the forge before the daemons started: the ids its approval rules had. */
export interface Seeded {
  ruleIds: ReadonlyMap<string, number>;
}

/** Which policy an endpoint serves, to count the faults each policy met. */
function areaOf(path: string): FaultArea {
  if (/\/(access_tokens|personal_access_tokens|deploy_tokens|variables)(\/|$)/.test(path)) return 'tokens';
  if (/^\/api\/v4\/projects\/[^/]+\/(protected_branches|approvals|approval_rules|services)(\/|$)/.test(path))
    return 'settings';
  if (/\/(jobs|pipelines)(\/|$)/.test(path)) return 'jobRetry';
  if (/\/registry\//.test(path)) return 'registry';
  if (/\/access_requests(\/|$)/.test(path) || /^\/api\/v4\/users\/[^/]+$/.test(path)) return 'access';
  if (/\/(keys|deploy_keys)(\/|$)/.test(path) || path === '/api/v4/user') return 'keys';
  return 'other';
}

function countFaults(log: readonly RequestLogEntry[]): Record<FaultArea, number> {
  const counts: Record<FaultArea, number> = {
    jobRetry: 0,
    registry: 0,
    access: 0,
    keys: 0,
    settings: 0,
    tokens: 0,
    other: 0,
  };
  for (const entry of log) if (entry.fault !== null) counts[areaOf(entry.path)] += 1;
  return counts;
}

/** A write the forge carried out: answered 2xx itself, or answered 2xx behind a fault that replaced its answer. */
export function forgeStatus(entry: RequestLogEntry): number | undefined {
  if (entry.fault === null) return entry.status;
  const behind = / after (\d+)$/.exec(entry.fault);
  return behind ? Number(behind[1]) : undefined;
}

const ok = (status: number | undefined): boolean => status !== undefined && status >= 200 && status < 300;

/** `logDir`: the scenario's folder, whose daemon logs are scanned for token values (at the end only: it is slow). */
export function readOutcome(
  state: SandboxState,
  design: Design,
  secretsDir: string,
  seeded: Seeded,
  logDir?: string,
): Outcome {
  const world = design.world;
  const log = state.requestLog;

  const worldJobIds = new Set<number>();
  const retriedInWorld = new Set<number>();
  for (const project of world.projects ?? []) {
    for (const pipeline of project.pipelines ?? []) {
      for (const job of pipeline.jobs ?? []) {
        if (job.id === undefined) continue;
        worldJobIds.add(job.id);
        if (job.retried) retriedInWorld.add(job.id);
      }
    }
  }
  const retried = new Set<number>();
  for (const job of state.jobs.values()) {
    if (worldJobIds.has(job.id) && job.retried && !retriedInWorld.has(job.id)) retried.add(job.id);
  }
  const retryActs = new Map<number, number>();
  for (const entry of log) {
    const match = /\/jobs\/(\d+)\/retry$/.exec(entry.path);
    if (entry.method !== 'POST' || !match || !ok(forgeStatus(entry))) continue;
    const id = Number(match[1]);
    retryActs.set(id, (retryActs.get(id) ?? 0) + 1);
  }

  const tagsLeft = new Map<number, Set<string>>();
  for (const repository of state.repositories.values()) tagsLeft.set(repository.id, new Set(repository.tags.keys()));
  const bulkRepeats = repeatedBulkDeletions(log);

  const access = new Map<string, number | 'deny'>();
  const pending = new Set(state.accessRequests.map((r) => accessKey(r.source, r.source_id, r.user_id)));
  const requested: string[] = [];
  for (const group of world.groups ?? []) {
    for (const request of group.access_requests ?? [])
      requested.push(requestKey(state, 'group', group.id, request.user));
  }
  for (const project of world.projects ?? []) {
    for (const request of project.access_requests ?? [])
      requested.push(requestKey(state, 'project', project.id, request.user));
  }
  for (const key of requested) {
    if (pending.has(key)) continue;
    const [source, sourceId, userId] = key.split(':');
    const member = state.members.find(
      (m) => m.source === source && m.source_id === Number(sourceId) && m.user_id === Number(userId),
    );
    access.set(key, member ? member.access_level : 'deny');
  }
  const accessActs = new Map<string, number>();
  for (const entry of log) {
    const match = /^\/api\/v4\/(groups|projects)\/([^/]+)\/access_requests\/(\d+)(\/approve)?$/.exec(entry.path);
    if (!match || !ok(forgeStatus(entry))) continue;
    if (!((entry.method === 'PUT' && match[4]) || (entry.method === 'DELETE' && !match[4]))) continue;
    const ref = decodeURIComponent(match[2]);
    const source = match[1] === 'groups' ? state.group(ref) : state.project(ref);
    if (!source) continue;
    const key = accessKey(match[1] === 'groups' ? 'group' : 'project', source.id, Number(match[3]));
    accessActs.set(key, (accessActs.get(key) ?? 0) + 1);
  }

  return {
    retried,
    retryActs,
    tagsInWorld: worldTags(design),
    tagsLeft,
    bulkRepeats,
    access,
    accessActs,
    keys: keyOutcomes(state, design, secretsDir),
    settings: readSettings(state, seeded.ruleIds),
    settingsWrites: settingsWrites(state, log, new Map([...invert(seeded.ruleIds), ...ruleNames(state)]), (entry) =>
      ok(forgeStatus(entry)),
    ),
    tokens: tokenOutcomes(state, design),
    familyRevocations: state.accessTokens.familyRevocations.map(
      (r) =>
        `family revocation (${r.cause}) by ${r.method} ${r.path} naming token ${r.token_id}: revoked ${r.revoked_ids.join(', ') || 'none left active'} at ${r.time}`,
    ),
    tokenLeaks: logDir === undefined ? [] : tokenLeaks(state, logDir),
    faults: countFaults(log),
  };
}

const tokenKey = (family: TokenFamily): string => `${family.kind}:${family.holder}:${family.name}`;
const tokenLabel = (family: TokenFamily): string =>
  `${family.kind === 'deploy' ? 'deploy' : `${family.kind} access`} token ${family.oldId} "${family.name}" of ${family.holder}`;

/** A token as the judge sees it, of either table. */
interface HeldToken {
  id: number;
  value: string;
  active: boolean;
}

/**
 * Each family of the world: its tokens now (the holder's tokens of that name; the old one may be gone), the new ones
 * among them, and the holder's variable. The variable must hold the value of the one new active token, which is a
 * token the forge lets authenticate (neither revoked nor expired).
 */
function tokenOutcomes(state: SandboxState, design: Design): Map<string, TokenOutcome> {
  const now = state.clock.date();
  const worldIds = new Set(design.tokens.map((f) => `${f.kind === 'deploy' ? 'deploy' : 'access'}:${f.oldId}`));
  const lost = lostIssues(state);
  const outcomes = new Map<string, TokenOutcome>();
  for (const family of design.tokens) {
    const source = family.kind === 'group' ? 'group' : 'project';
    const place = source === 'group' ? state.group(family.holder) : state.project(family.holder);
    const placeId = place?.id ?? 0;
    const table = family.kind === 'deploy' ? 'deploy' : 'access';
    const held: HeldToken[] =
      family.kind === 'deploy'
        ? state.deployTokens
            .of(source, placeId)
            .filter((t) => t.name === family.name)
            .map((t) => ({ id: t.id, value: t.value, active: !t.revoked && !state.deployTokens.expired(t, now) }))
        : state.accessTokens
            .ofPlace(source, placeId)
            .filter((t) => t.name === family.name)
            .map((t) => ({ id: t.id, value: t.value, active: state.accessTokens.active(t, now) }));
    const old = held.find((t) => t.id === family.oldId);
    const fresh = held.filter((t) => !worldIds.has(`${table}:${t.id}`));
    const freshActive = fresh.filter((t) => t.active);
    const oldGone = !old?.active;
    const problems: string[] = [];
    const touched = oldGone || fresh.length > 0;
    if (touched) {
      if (freshActive.length !== 1)
        problems.push(
          `${freshActive.length} active new tokens (${fresh.map((t) => `${t.id}${t.active ? '' : ' inactive'}`).join(', ') || 'none made'})`,
        );
      if (!oldGone) problems.push(`half done: old token ${family.oldId} still active`);
      const variable = state.ciVariables
        .of(source, placeId)
        .find((v) => v.key === family.variable && v.environment_scope === '*');
      const holds = variable === undefined ? undefined : held.find((t) => t.value === variable.value);
      if (!variable) problems.push(`variable ${family.variable} is missing`);
      else if (!holds) problems.push(`variable ${family.variable} holds no value of the family`);
      else if (!holds.active)
        problems.push(
          `variable ${family.variable} holds token ${holds.id}, which the forge refuses (revoked or expired)`,
        );
      else if (holds.id === family.oldId) problems.push(`variable ${family.variable} still holds the old token`);
    }
    const surplus = Math.max(0, fresh.length - 1 - (lost.get(`${table}:${source}:${placeId}`) ?? 0));
    outcomes.set(tokenKey(family), {
      label: tokenLabel(family),
      rotated: touched && problems.length === 0,
      touched,
      surplus,
      problems,
    });
  }
  return outcomes;
}

/**
 * Issuing calls (a rotate, a create) the forge carried out whose answer a fault replaced, by table and holder: the
 * daemon never got that value, so it rightly makes the family's token again.
 */
function lostIssues(state: SandboxState): Map<string, number> {
  const lost = new Map<string, number>();
  for (const entry of state.requestLog) {
    const match = /^\/api\/v4\/(projects|groups)\/([^/]+)\/(access_tokens|deploy_tokens)(\/\d+\/rotate)?$/.exec(
      entry.path,
    );
    if (entry.method !== 'POST' || !match || entry.fault === null || !ok(forgeStatus(entry))) continue;
    const ref = decodeURIComponent(match[2]);
    const source = match[1] === 'groups' ? 'group' : 'project';
    const id = (source === 'group' ? state.group(ref) : state.project(ref))?.id ?? 0;
    const key = `${match[3] === 'deploy_tokens' ? 'deploy' : 'access'}:${source}:${id}`;
    lost.set(key, (lost.get(key) ?? 0) + 1);
  }
  return lost;
}

/** Every token value the forge ever made or was seeded with, searched for in each daemon log of the scenario. */
function tokenLeaks(state: SandboxState, logDir: string): string[] {
  const values = new Map<string, string>();
  for (const t of state.accessTokens.tokens.values()) values.set(t.value, `access token ${t.id}`);
  for (const t of state.deployTokens.tokens.values()) values.set(t.value, `deploy token ${t.id}`);
  const leaks: string[] = [];
  let files: string[];
  try {
    files = readdirSync(logDir)
      .filter((name) => /^daemon-.*\.log$/.test(name))
      .sort();
  } catch {
    return leaks;
  }
  for (const name of files) {
    const text = readFileSync(join(logDir, name), 'utf8');
    for (const [value, label] of values) if (text.includes(value)) leaks.push(`${label}'s value is in ${name}`);
  }
  return leaks;
}

function requestKey(
  state: SandboxState,
  source: 'group' | 'project',
  sourceId: number | undefined,
  username: string,
): string {
  const user = state.userByUsername(username);
  return accessKey(source, sourceId ?? 0, user?.id ?? 0);
}

/**
 * Bulk deletions that reached the forge's handler (answered 202, or 400 for the hourly limit, possibly behind a
 * fault) within an hour of sandbox time after an accepted one on the same repository: each is a call the daemon's
 * hourly ledger should have prevented.
 */
function repeatedBulkDeletions(log: readonly RequestLogEntry[]): string[] {
  const accepted = new Map<number, number[]>();
  const repeats: string[] = [];
  for (const entry of log) {
    const match = /\/registry\/repositories\/(\d+)\/tags$/.exec(entry.path);
    if (entry.method !== 'DELETE' || !match) continue;
    const status = forgeStatus(entry);
    if (status !== 202 && status !== 400) continue;
    const repository = Number(match[1]);
    const at = Date.parse(entry.time);
    const earlier = (accepted.get(repository) ?? []).filter((t) => at - t < HOUR_MS);
    if (earlier.length > 0) {
      const minutes = Math.round((at - Math.max(...earlier)) / 60_000);
      repeats.push(
        `repository ${repository}: bulk deletion ${minutes} min after an accepted one, forge answered ${status}${entry.fault ? ` (client got ${entry.fault})` : ''} at ${entry.time}`,
      );
    }
    if (status === 202) accepted.set(repository, [...(accepted.get(repository) ?? []), at]);
  }
  return repeats;
}

interface KeyFile {
  path: string;
  mode: number;
}

/** Private key files under `dir`, by the fingerprint of their public half. Anything unreadable is skipped. */
function keyFiles(dir: string): Map<string, KeyFile[]> {
  const byFingerprint = new Map<string, KeyFile[]>();
  let entries: string[];
  try {
    entries = readdirSync(dir, { recursive: true, encoding: 'utf8' });
  } catch {
    return byFingerprint;
  }
  for (const name of entries) {
    if (name.endsWith('.pub')) continue;
    const path = join(dir, name);
    try {
      const stat = statSync(path);
      if (!stat.isFile()) continue;
      const info = readOpenSshPrivateKey(readFileSync(path, 'utf8'));
      byFingerprint.set(info.fingerprint, [
        ...(byFingerprint.get(info.fingerprint) ?? []),
        { path, mode: stat.mode & 0o777 },
      ]);
    } catch {
      // Not a private key (a temp file, a half-written one): it holds no key the forge could list.
    }
  }
  return byFingerprint;
}

function keyOutcomes(state: SandboxState, design: Design, secretsDir: string): Map<string, KeyOutcome> {
  const files = keyFiles(secretsDir);
  const fileProblem = (fingerprint: string, id: number): string | undefined => {
    const found = files.get(fingerprint) ?? [];
    if (found.length === 0)
      return `new key ${id} (${fingerprint}) has no private key file in secrets_dir (lost or overwritten)`;
    if (!found.some((f) => f.mode === 0o600)) {
      return `private key file of new key ${id} has mode ${found.map((f) => f.mode.toString(8)).join(', ')}, not 600`;
    }
    return undefined;
  };
  const outcomes = new Map<string, KeyOutcome>();
  const root = state.userByUsername('root');
  const worldSsh = (design.world.users ?? []).flatMap((u) => u.ssh_keys ?? []);
  const worldSshIds = new Set(worldSsh.map((k) => k.id));
  for (const old of worldSsh) {
    if (old.id === undefined) continue;
    const fresh = [...state.sshKeys.values()].filter(
      (k) => !worldSshIds.has(k.id) && k.title === old.title && k.user_id === root?.id,
    );
    const removed = !state.sshKeys.has(old.id);
    const problems = fresh.map((k) => fileProblem(k.fingerprint_sha256, k.id)).filter((p) => p !== undefined);
    if (removed && fresh.length === 0) problems.push('old key removed without a new key');
    if (!removed && fresh.length > 0)
      problems.push(`half done: new key ${fresh.map((k) => k.id).join(', ')} uploaded, old key still there`);
    outcomes.set(`ssh:${old.id}`, {
      label: `ssh key ${old.id} "${old.title}"`,
      removed,
      newKeys: fresh.length,
      problems,
    });
  }

  const worldDeploy = design.world.deploy_keys ?? [];
  const worldDeployIds = new Set(worldDeploy.map((k) => k.id));
  for (const old of worldDeploy) {
    if (old.id === undefined) continue;
    const oldProjects = new Map(
      (old.projects ?? []).map((p) => [state.project(p.project)?.id ?? 0, p.can_push ?? false]),
    );
    const fresh = [...state.deployKeys.values()].filter(
      (k) =>
        !worldDeployIds.has(k.id) && k.title === old.title && [...k.projects.keys()].some((p) => oldProjects.has(p)),
    );
    const current = state.deployKeys.get(old.id);
    const removed = current === undefined || ![...current.projects.keys()].some((p) => oldProjects.has(p));
    const problems = fresh.map((k) => fileProblem(k.fingerprint_sha256, k.id)).filter((p) => p !== undefined);
    if (removed && fresh.length === 0) problems.push('old key removed without a new key');
    if (!removed && fresh.length > 0)
      problems.push(`half done: new key ${fresh.map((k) => k.id).join(', ')} uploaded, old key still there`);
    if (removed && current !== undefined)
      problems.push(`old key still on project(s) ${[...current.projects.keys()].join(', ')}`);
    for (const key of fresh) {
      for (const [project, canPush] of oldProjects) {
        const link = key.projects.get(project);
        if (!link) problems.push(`new key ${key.id} is not on project ${project}`);
        else if (link.can_push !== canPush)
          problems.push(
            `new key ${key.id} has can_push ${link.can_push} on project ${project}, the old key had ${canPush}`,
          );
      }
    }
    outcomes.set(`deploy:${old.id}`, {
      label: `deploy key ${old.id} "${old.title}"`,
      removed,
      newKeys: fresh.length,
      problems,
    });
  }
  return outcomes;
}

/** What the design says a correct daemon leaves: the yardstick of the reference run. */
export function designOutcome(design: Design): Outcome {
  const keys = new Map<string, KeyOutcome>();
  for (const user of design.world.users ?? []) {
    for (const key of user.ssh_keys ?? []) {
      if (key.id === undefined) continue;
      const rotated = design.rotatedSshKeys.has(key.id);
      keys.set(`ssh:${key.id}`, {
        label: `ssh key ${key.id} "${key.title}"`,
        removed: rotated,
        newKeys: rotated ? 1 : 0,
        problems: [],
      });
    }
  }
  for (const key of design.world.deploy_keys ?? []) {
    if (key.id === undefined) continue;
    const rotated = design.rotatedDeployKeys.has(key.id);
    keys.set(`deploy:${key.id}`, {
      label: `deploy key ${key.id} "${key.title}"`,
      removed: rotated,
      newKeys: rotated ? 1 : 0,
      problems: [],
    });
  }
  return {
    retried: new Set(design.retriedJobs),
    retryActs: new Map([...design.retriedJobs].map((id) => [id, 1])),
    tagsInWorld: worldTags(design),
    tagsLeft: design.tagsLeft,
    bulkRepeats: [],
    access: design.accessDecisions,
    accessActs: new Map([...design.accessDecisions.keys()].map((key) => [key, 1])),
    keys,
    settings: new Map(design.settings.map(({ item, after }) => [item, after])),
    settingsWrites: new Map(
      design.settings
        .filter(({ writes }) => writes > 0)
        .map(({ item, writes }) => [item, { carried: writes, unanswered: 0 }]),
    ),
    tokens: new Map(
      design.tokens.map((family) => [
        tokenKey(family),
        { label: tokenLabel(family), rotated: family.rotate, touched: family.rotate, surplus: 0, problems: [] },
      ]),
    ),
    familyRevocations: [],
    tokenLeaks: [],
    faults: { jobRetry: 0, registry: 0, access: 0, keys: 0, settings: 0, tokens: 0, other: 0 },
  };
}

/** `acme/api rule security` → 7 becomes 7 → `security`. */
function invert(ids: ReadonlyMap<string, number>): Map<number, string> {
  return new Map([...ids].map(([item, id]) => [id, item.slice(item.lastIndexOf(' rule ') + ' rule '.length)]));
}

function worldTags(design: Design): Map<number, Set<string>> {
  const tags = new Map<number, Set<string>>();
  for (const project of design.world.projects ?? []) {
    for (const repository of project.registry ?? []) {
      if (repository.id !== undefined) tags.set(repository.id, new Set((repository.tags ?? []).map((t) => t.name)));
    }
  }
  return tags;
}

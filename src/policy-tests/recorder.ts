import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Logger } from '@nestjs/common';
import { type Clock, systemClock } from '../clock';
import type { PolicyConfig } from '../config/policy-type';
import type { ProjectRef } from '../config/validators';
import type { Decision, UnobservedTarget } from '../engine/decision';
import { ProjectDiscovery } from '../engine/discovery';
import { handContext } from '../engine/hand-context';
import { MemoryDiscoveryCache, MemoryPolicyState } from '../engine/memory-stores';
import type { PolicyType, ProjectDiscoverer } from '../engine/policy';
import type { GitlabClient } from '../gitlab/client';
import { ApiError } from '../gitlab/transport/errors';
import type { AccessLevel } from '../gitlab/types/access-levels';
import type { Project } from '../gitlab/types/projects';
import { isAdminView } from '../gitlab/types/users';
import { parseWorld, type World } from '../sandbox/world';
import { RECORDED_TOKEN, RecordedWorld, type Unreadable } from './recorded-world';
import { type Answer, recordingClient } from './recording-client';

/**
 * `forgewarden record`: one pass of a policy's own observe against the live forge, read-only, every answer kept, then
 * the reads that complete what those answers name (each project's record, the groups above it, users named by id, the
 * token's roles), and the world they describe. Only reads are sent, through the client's request budget.
 */

export interface RecordOptions {
  readonly policy: PolicyConfig;
  readonly runner: PolicyType;
  readonly client: GitlabClient;
  /** The time of the recording: the world's `now`, and the pass's. */
  readonly now: Date;
  /** At most this many projects in the world; a selection of more is cut, and said. */
  readonly maxProjects: number;
  readonly anonymise: boolean;
}

export interface Recording {
  readonly world: World;
  /** What the policy decides on what was read: the expectations of a test of the recording. */
  readonly decisions: readonly Decision[];
  readonly unobserved: readonly UnobservedTarget[];
  /** The username of the token, whom the test's policy acts as. */
  readonly as: string;
  /** Projects left out over `maxProjects`. */
  readonly cut: number;
  /** Answers kept. */
  readonly answers: number;
}

/** Rounds of completing reads: a project's namespace, that group's parents, a user an approval rule names. */
const COMPLETION_ROUNDS = 6;
const LEVELS: readonly AccessLevel[] = [50, 40, 30, 20, 10];

export async function recordWorld(options: RecordOptions): Promise<Recording> {
  const answers: Answer[] = [];
  const client = recordingClient(options.client, answers);
  const folders = mkdtempSync(join(tmpdir(), 'forgewarden-record-'));
  const logger = new Logger(`record:${options.policy.name}`);
  try {
    const me = await client.users.current();
    const config =
      options.runner.withFolders?.(options.policy, (key) => {
        const folder = join(folders, key);
        mkdirSync(folder, { recursive: true });
        return folder;
      }) ?? options.policy;
    const clock: Clock = { ...systemClock, now: () => options.now.getTime() };
    const bounded = new BoundedDiscovery(
      new ProjectDiscovery(client, new MemoryDiscoveryCache(), clock, 10 * 60_000, logger),
      options.maxProjects,
    );
    const context = handContext(client, config, new MemoryPolicyState(), {
      now: options.now,
      clock: { now: () => new Date(options.now), sleep: (ms) => systemClock.sleep(ms) },
      mode: 'plan',
      logger,
      concurrency: 4,
      discovery: bounded,
    });
    const snapshot = await options.runner.observe(config, context);
    const decisions = options.runner.decide(config, snapshot, options.now);

    const unreadable: Unreadable = { projects: new Set(), groups: new Set(), users: new Set() };
    const noRoles = { group: new Map(), project: new Map() };
    let cut = bounded.cut;
    for (let round = 0; round < COMPLETION_ROUNDS; round++) {
      // Built again from every answer so far: each round's reads name what the next round reads.
      const missing = new RecordedWorld(answers, { token: RECORDED_TOKEN, levels: noRoles }, unreadable).missing(
        options.maxProjects,
      );
      if (round === 0) cut += missing.cut;
      if (missing.projects.length + missing.groups.length + missing.users.length === 0) break;
      for (const ref of missing.projects)
        await readOrDrop(
          () => client.projects.show(ref as ProjectRef),
          () => unreadable.projects.add(String(ref)),
        );
      for (const ref of missing.groups)
        await readOrDrop(
          () => client.groups.show(ref as string, { with_projects: false }),
          () => unreadable.groups.add(String(ref)),
        );
      for (const id of missing.users)
        await readOrDrop(
          () => client.users.show(id),
          () => unreadable.users.add(id),
        );
    }
    const levels = isAdminView(me) && me.is_admin ? noRoles : await roles(options.client, answers);
    const recorded = new RecordedWorld(answers, { token: RECORDED_TOKEN, levels }, unreadable);
    const built = recorded.build(options.now.toISOString(), { anonymise: options.anonymise });
    // The world must be one the sandbox serves: a problem here is the recorder's, said as such.
    parseWorld(built, 'the recorded world');
    return {
      world: built,
      decisions,
      unobserved: context.unobserved.list(),
      as: me.username,
      cut,
      answers: answers.length,
    };
  } finally {
    rmSync(folders, { recursive: true, force: true });
  }
}

/** A completing read; one the forge refuses or does not find leaves that part out of the world. */
async function readOrDrop(read: () => Promise<unknown>, drop: () => void): Promise<void> {
  try {
    await read();
  } catch (error) {
    if (!(error instanceof ApiError) || (error.status !== 403 && error.status !== 404)) throw error;
    drop();
  }
}

/**
 * The token's role in each group and project the world holds, for a token that is no administrator: a project's own
 * record says it (`permissions`), and the group listings by `min_access_level` say a group's, the highest first.
 */
async function roles(
  client: GitlabClient,
  answers: readonly Answer[],
): Promise<{ group: Map<number, 10 | 20 | 30 | 40 | 50>; project: Map<number, 10 | 20 | 30 | 40 | 50> }> {
  const project = new Map<number, 10 | 20 | 30 | 40 | 50>();
  for (const answer of answers) {
    if (answer.resource !== 'projects' || answer.method !== 'show') continue;
    const { permissions, id } = answer.value as Project;
    const level = Math.max(
      permissions?.project_access?.access_level ?? 0,
      permissions?.group_access?.access_level ?? 0,
    );
    if (level >= 10) project.set(id, level as 10 | 20 | 30 | 40 | 50);
  }
  const group = new Map<number, 10 | 20 | 30 | 40 | 50>();
  for (const level of LEVELS) {
    for await (const found of client.groups.all({ min_access_level: level, all_available: false })) {
      if (!group.has(found.id)) group.set(found.id, level as 10 | 20 | 30 | 40 | 50);
    }
  }
  return { group, project };
}

/** The engine's discovery, its projects cut at `max`: a glob over thousands records the first ones, and says so. */
class BoundedDiscovery implements ProjectDiscoverer {
  cut = 0;

  constructor(
    private readonly discovery: ProjectDiscoverer,
    private readonly max: number,
  ) {}

  async select(...args: Parameters<ProjectDiscoverer['select']>): Promise<ProjectRef[]> {
    const selected = await this.discovery.select(...args);
    this.cut = Math.max(this.cut, selected.length - this.max);
    return selected.slice(0, this.max);
  }

  selectGroups(...args: Parameters<ProjectDiscoverer['selectGroups']>): ReturnType<ProjectDiscoverer['selectGroups']> {
    return this.discovery.selectGroups(...args);
  }
}

import { createHash } from 'node:crypto';
import type { RequestLogEntry, SandboxState } from '../../src/sandbox';
import { integrationsOf } from '../../src/sandbox/integrations-state';
import { apiClient } from '../support/sandbox-http';
import type { ProjectInput } from '../support/world-builders';

/**
 * The project_settings part of the chaos world: protections in the world file, approval settings, rules and
 * integrations put in place through the forge's API before the daemons start, and what a correct daemon makes of
 * them. Settings are compared as items (`acme/api branch main`), each as one line of text, so a run that left one
 * item otherwise shows which and how.
 */

/** The policy's declared state (policy-file.ts writes it into the policy file). */
export const SETTINGS = {
  projects: ['acme/**'],
  webhook: 'https://chat.example.test/hooks/chaos-4f9a',
  securityGroupId: 10,
} as const;

/** The world's protections, by project path (the world file takes them with the projects). */
export const WORLD_PROTECTIONS: Readonly<Record<string, NonNullable<ProjectInput['protected_branches']>>> = {
  // Developers may push to main (a level change: unprotect, then protect), and `legacy` is not declared (pruned).
  'acme/api': [
    { name: 'main', push_access_level: 'developer', merge_access_level: 'developer' },
    { name: 'legacy', push_access_level: 'maintainer', merge_access_level: 'maintainer' },
  ],
  // Nothing protected: both declared protections are made.
  'acme/web': [],
  // As declared: left alone.
  'acme/worker': [
    { name: 'main', push_access_level: 'maintainer', merge_access_level: 'developer' },
    { name: 'release/*', push_access_level: 'no_access', merge_access_level: 'maintainer' },
  ],
  // Not selected by the policy (`acme/**`): its drift stays.
  'tools/cli': [{ name: 'main', push_access_level: 'developer', merge_access_level: 'developer' }],
};

/**
 * One item of a project's settings, before the run and as a correct daemon leaves it, with the writes that takes when
 * nothing fails (`writes`: the forge calls that change it).
 */
export interface SettingsItem {
  item: string;
  before: string;
  after: string;
  writes: number;
}

const ABSENT = 'absent';
const branch = (push: number, merge: number, unprotect = 40): string =>
  `push ${push} merge ${merge} unprotect ${unprotect} force false code_owner false`;
const settings = (reset: boolean, author: boolean): string =>
  `reset_approvals_on_push ${reset} merge_requests_author_approval ${author}`;
const rule = (approvals: number, groups: number[], keptId?: string): string =>
  `${keptId ? `id ${keptId} ` : ''}approvals_required ${approvals} user_ids [] group_ids [${groups.join(',')}]`;
const chat = (webhook: string | undefined): string =>
  webhook === undefined ? ABSENT : `active true notify_only_broken_pipelines true webhook ${fingerprint(webhook)}`;

/**
 * Everything the policy looks at or must leave alone. Rule ids are the ones the forge gives while seeding (in the
 * order below), so a rule deleted and made again instead of updated shows.
 */
export const SETTINGS_ITEMS: readonly SettingsItem[] = [
  { item: 'acme/api branch main', before: branch(30, 30), after: branch(40, 30), writes: 2 },
  { item: 'acme/api branch legacy', before: branch(40, 40), after: ABSENT, writes: 1 },
  { item: 'acme/api branch release/*', before: ABSENT, after: branch(0, 40), writes: 1 },
  { item: 'acme/api approval settings', before: settings(true, false), after: settings(false, false), writes: 1 },
  {
    item: 'acme/api rule security',
    before: rule(1, [], 'kept'),
    after: rule(2, [SETTINGS.securityGroupId], 'kept'),
    writes: 1,
  },
  { item: 'acme/api rule old-rule', before: rule(1, [], 'kept'), after: ABSENT, writes: 1 },
  { item: 'acme/api integration chat-notifications-a', before: ABSENT, after: chat(SETTINGS.webhook), writes: 1 },
  { item: 'acme/web branch main', before: ABSENT, after: branch(40, 30), writes: 1 },
  { item: 'acme/web branch release/*', before: ABSENT, after: branch(0, 40), writes: 1 },
  { item: 'acme/web approval settings', before: settings(true, false), after: settings(false, false), writes: 1 },
  { item: 'acme/web rule security', before: ABSENT, after: rule(2, [SETTINGS.securityGroupId]), writes: 1 },
  { item: 'acme/web integration chat-notifications-a', before: ABSENT, after: chat(SETTINGS.webhook), writes: 1 },
  { item: 'acme/worker branch main', before: branch(40, 30), after: branch(40, 30), writes: 0 },
  { item: 'acme/worker branch release/*', before: branch(0, 40), after: branch(0, 40), writes: 0 },
  { item: 'acme/worker approval settings', before: settings(false, false), after: settings(false, false), writes: 0 },
  {
    item: 'acme/worker rule security',
    before: rule(2, [SETTINGS.securityGroupId], 'kept'),
    after: rule(2, [SETTINGS.securityGroupId], 'kept'),
    writes: 0,
  },
  // Set as declared, but the daemon has no fingerprint of the secret yet: it sets it once.
  {
    item: 'acme/worker integration chat-notifications-a',
    before: chat(SETTINGS.webhook),
    after: chat(SETTINGS.webhook),
    writes: 1,
  },
  { item: 'tools/cli branch main', before: branch(30, 30), after: branch(30, 30), writes: 0 },
  { item: 'tools/cli approval settings', before: settings(true, false), after: settings(true, false), writes: 0 },
];

/** Approval settings, rules and integrations, set through the API as a person would (the request log is cleared after). */
export async function seedSettings(url: string, token: string): Promise<void> {
  const api = apiClient(url, token);
  const send = async (path: string, method: string, body: Record<string, unknown>): Promise<void> => {
    const response = await api(path, { method, body });
    if (response.status >= 300)
      throw new Error(`chaos world: ${method} ${path} answered ${response.status}: ${response.text}`);
  };
  const worker = encodeURIComponent('acme/worker');
  const apiProject = encodeURIComponent('acme/api');
  await send(`/projects/${apiProject}/approval_rules`, 'POST', { name: 'security', approvals_required: 1 });
  await send(`/projects/${apiProject}/approval_rules`, 'POST', { name: 'old-rule', approvals_required: 1 });
  await send(`/projects/${worker}/approvals`, 'POST', { reset_approvals_on_push: false });
  await send(`/projects/${worker}/approval_rules`, 'POST', {
    name: 'security',
    approvals_required: 2,
    group_ids: [SETTINGS.securityGroupId],
  });
  await send(`/projects/${worker}/services/chat-notifications-a`, 'PUT', {
    webhook: SETTINGS.webhook,
    notify_only_broken_pipelines: true,
  });
}

/** Rule id → its name, for the rules the forge holds now (with those seeded before, kept by the caller). */
export function ruleNames(state: SandboxState): Map<number, string> {
  const names = new Map<number, string>();
  for (const project of state.projects.values()) {
    for (const record of state.approvals.project(project.id).rules) names.set(record.id, record.name);
  }
  return names;
}

/**
 * Every item of SETTINGS_ITEMS as the forge holds it now, and any other protection, rule or integration of those
 * projects (which a correct daemon neither makes nor leaves behind). `seededRuleIds` are the ids the rules had before
 * the run: a rule that kept its id reads `id kept`.
 */
export function readSettings(state: SandboxState, seededRuleIds: ReadonlyMap<string, number>): Map<string, string> {
  const items = new Map<string, string>(SETTINGS_ITEMS.map(({ item }) => [item, ABSENT]));
  const integrations = integrationsOf(state);
  const projects = new Set(SETTINGS_ITEMS.map(({ item }) => item.split(' ')[0]));
  for (const path of projects) {
    const project = state.project(path);
    if (!project) continue;
    for (const record of state.protectedBranches.values()) {
      if (record.project_id !== project.id) continue;
      const levels = (entries: readonly { access_level: number | null }[]): string =>
        entries.map((entry) => entry.access_level ?? '-').join(',');
      items.set(
        `${path} branch ${record.name}`,
        `push ${levels(record.push_access_levels)} merge ${levels(record.merge_access_levels)} unprotect ${levels(record.unprotect_access_levels)} ` +
          `force ${record.allow_force_push} code_owner ${record.code_owner_approval_required}`,
      );
    }
    const approvals = state.approvals.project(project.id);
    items.set(
      `${path} approval settings`,
      settings(approvals.settings.reset_approvals_on_push, approvals.settings.merge_requests_author_approval),
    );
    for (const record of approvals.rules) {
      const seeded = seededRuleIds.get(`${path} rule ${record.name}`);
      const id = seeded === undefined ? undefined : seeded === record.id ? 'kept' : `${record.id} (was ${seeded})`;
      items.set(
        `${path} rule ${record.name}`,
        `${id ? `id ${id} ` : ''}approvals_required ${record.approvals_required} user_ids [${record.user_ids.join(',')}] group_ids [${record.group_ids.join(',')}]`,
      );
    }
    for (const record of integrations.of(project.id)) {
      const webhook = record.properties.webhook;
      items.set(
        `${path} integration ${record.slug}`,
        `active ${record.active} notify_only_broken_pipelines ${String(record.properties.notify_only_broken_pipelines)} webhook ${typeof webhook === 'string' ? fingerprint(webhook) : String(webhook)}`,
      );
    }
  }
  return items;
}

/** The rules the forge holds, by item, with their ids: what `readSettings` checks kept ids against. */
export function seededRuleIds(state: SandboxState): Map<string, number> {
  const ids = new Map<string, number>();
  for (const project of state.projects.values()) {
    const path = state.projectFullPath(project);
    for (const record of state.approvals.project(project.id).rules) ids.set(`${path} rule ${record.name}`, record.id);
  }
  return ids;
}

/** Writes to one item the forge carried out, and those among them whose answer the daemon did not get. */
export interface ItemWrites {
  carried: number;
  unanswered: number;
}

/**
 * The writes to settings items the forge carried out (answered 2xx itself, or behind a fault that replaced its answer),
 * by item. `ruleNames` names rules addressed by id.
 */
export function settingsWrites(
  state: SandboxState,
  log: readonly RequestLogEntry[],
  ruleNamesById: ReadonlyMap<number, string>,
  carried: (entry: RequestLogEntry) => boolean,
): Map<string, ItemWrites> {
  const writes = new Map<string, ItemWrites>();
  for (const entry of log) {
    if (entry.method === 'GET' || !carried(entry)) continue;
    const item = settingsItemOf(state, entry, ruleNamesById);
    if (!item) continue;
    const counts = writes.get(item) ?? { carried: 0, unanswered: 0 };
    counts.carried += 1;
    if (entry.fault !== null) counts.unanswered += 1;
    writes.set(item, counts);
  }
  return writes;
}

function settingsItemOf(
  state: SandboxState,
  entry: RequestLogEntry,
  ruleNamesById: ReadonlyMap<number, string>,
): string | undefined {
  const match =
    /^\/api\/v4\/projects\/([^/]+)\/(protected_branches|approvals|approval_rules|services)(?:\/([^/]+))?$/.exec(
      entry.path,
    );
  if (!match) return undefined;
  const ref = decodeURIComponent(match[1]);
  const project = /^\d+$/.test(ref) ? state.projects.get(Number(ref)) : state.project(ref);
  if (!project) return undefined;
  const path = state.projectFullPath(project);
  const name = match[3] === undefined ? undefined : decodeURIComponent(match[3]);
  const bodyName = typeof entry.body.name === 'string' ? entry.body.name : undefined;
  switch (match[2]) {
    case 'protected_branches':
      return `${path} branch ${name ?? bodyName ?? '?'}`;
    case 'approvals':
      return `${path} approval settings`;
    case 'approval_rules':
      return `${path} rule ${name === undefined ? (bodyName ?? '?') : (ruleNamesById.get(Number(name)) ?? `#${name}`)}`;
    default:
      return `${path} integration ${name ?? '?'}`;
  }
}

/** Secrets are compared by a short digest, so the table and the summary never hold one. */
function fingerprint(secret: string): string {
  return `sha256:${createHash('sha256').update(secret).digest('hex').slice(0, 12)}`;
}

import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateOpenSshKeyPair } from '../../src/policies/key-rotation/openssh';
import {
  FaultRules,
  parseWorld,
  SandboxState,
  startSandbox,
  type RequestLogEntry,
  type RunningSandbox,
} from '../../src/sandbox';
import { parseSshPublicKey } from '../../src/sandbox/ssh-key';
import { apiClient } from '../support/sandbox-http';
import { ADMIN_TOKEN } from '../support/world-builders';
import { compare, passed } from './compare';
import { designOutcome, readOutcome, type Seeded } from './outcome';
import { SETTINGS } from './project-settings';
import { seedForge } from './scenario';
import { accessKey, buildDesign, type Design, type TokenFamily } from './world';

/**
 * The chaos suite's yardstick on a forge changed by hand: a complete, correct run passes; each kind of drop or double
 * the suite exists to catch shows in the right column.
 */
/** These tests build the forge's state by hand, without the settings the scenario seeds through the API. */
const NOT_SEEDED: Seeded = { ruleIds: new Map() };

describe('chaos outcome and comparison', () => {
  const design: Design = buildDesign();
  let state: SandboxState;
  let secrets: string;

  beforeEach(() => {
    state = new SandboxState(parseWorld(design.world), new FaultRules());
    secrets = mkdtempSync(join(tmpdir(), 'chaos-outcome-spec-'));
  });

  afterEach(() => rmSync(secrets, { recursive: true, force: true }));

  const logWrite = (method: string, path: string, status: number, fault: string | null = null): void => {
    const entry: RequestLogEntry = {
      time: state.nowIso(),
      method,
      path,
      query: {},
      headers: {},
      body: {},
      status,
      fault,
      duration_ms: 1,
    };
    state.requestLog.push(entry);
  };

  const retry = (id: number): void => {
    const job = state.jobs.get(id);
    if (!job) throw new Error(`no job ${id}`);
    job.retried = true;
    logWrite('POST', `/api/v4/projects/${job.project_id}/jobs/${id}/retry`, 200);
  };

  const clean = (): void => {
    for (const [id, left] of design.tagsLeft) {
      const repository = state.repositories.get(id);
      for (const name of [...(repository?.tags.keys() ?? [])]) if (!left.has(name)) repository?.tags.delete(name);
      logWrite('DELETE', `/api/v4/projects/1/registry/repositories/${id}/tags`, 202);
    }
  };

  const decide = (): void => {
    for (const [key, decision] of design.accessDecisions) {
      const [source, sourceId, userId] = key.split(':');
      const index = state.accessRequests.findIndex((r) => accessKey(r.source, r.source_id, r.user_id) === key);
      state.accessRequests.splice(index, 1);
      if (decision !== 'deny') {
        state.members.push({
          source: source as 'group' | 'project',
          source_id: Number(sourceId),
          user_id: Number(userId),
          access_level: decision,
          created_at: state.nowIso(),
        });
      }
    }
  };

  /** Replaces an old SSH key by a new one with the same title, its private half written as the daemon would. */
  const rotateSsh = (oldId: number, mode = 0o600): string => {
    const old = state.sshKeys.get(oldId);
    if (!old) throw new Error(`no key ${oldId}`);
    const pair = generateOpenSshKeyPair('ed25519', 'spec');
    const parsed = parseSshPublicKey(pair.publicKey);
    if (!parsed) throw new Error('unparsable key');
    const id = state.nextId('key');
    state.sshKeys.set(id, {
      ...old,
      id,
      key: pair.publicKey,
      normalized: parsed.normalized,
      fingerprint: parsed.fingerprintMd5,
      fingerprint_sha256: parsed.fingerprintSha256,
    });
    state.sshKeys.delete(oldId);
    const path = join(secrets, 'policy', `root-${oldId}`);
    mkdirSync(join(secrets, 'policy'), { recursive: true });
    writeFileSync(path, pair.privateKey);
    chmodSync(path, mode);
    return path;
  };

  const rotateDeploy = (oldId: number): void => {
    const old = state.deployKeys.get(oldId);
    if (!old) throw new Error(`no deploy key ${oldId}`);
    const pair = generateOpenSshKeyPair('ed25519', 'spec');
    const parsed = parseSshPublicKey(pair.publicKey);
    if (!parsed) throw new Error('unparsable key');
    const id = state.nextId('key');
    state.deployKeys.set(id, {
      ...old,
      id,
      key: pair.publicKey,
      fingerprint_sha256: parsed.fingerprintSha256,
      projects: new Map(old.projects),
    });
    state.deployKeys.delete(oldId);
    writeFileSync(join(secrets, `deploy-${oldId}`), pair.privateKey, { mode: 0o600 });
  };

  const doEverything = (): void => {
    for (const id of design.retriedJobs) retry(id);
    clean();
    decide();
    for (const id of design.rotatedSshKeys) rotateSsh(id);
    for (const id of design.rotatedDeployKeys) rotateDeploy(id);
  };

  it('passes a run that did exactly what the design says', () => {
    doEverything();
    const counts = compare(designOutcome(design), readOutcome(state, design, secrets, NOT_SEEDED));
    expect([counts.jobRetry, counts.registry, counts.access, counts.keys].map(passed)).toEqual([
      true,
      true,
      true,
      true,
    ]);
    expect(counts.jobRetry).toMatchObject({ expected: 28, done: 28 });
    expect(counts.registry).toMatchObject({ expected: 50, done: 50 });
    expect(counts.access).toMatchObject({ expected: 16, done: 16 });
    expect(counts.keys).toMatchObject({ expected: 5, done: 5 });
  });

  it('counts everything missing on an untouched forge', () => {
    const counts = compare(designOutcome(design), readOutcome(state, design, secrets, NOT_SEEDED));
    expect([counts.jobRetry.missing, counts.registry.missing, counts.access.missing, counts.keys.missing]).toEqual([
      28, 50, 16, 5,
    ]);
  });

  it('counts a retry the forge carried out twice, once behind a lost answer', () => {
    doEverything();
    const [first] = design.retriedJobs;
    logWrite('POST', `/api/v4/projects/1/jobs/${first}/retry`, 502, 'status 502 after 200');
    // Refused before the forge acted: not a second retry.
    logWrite('POST', `/api/v4/projects/1/jobs/${first}/retry`, 503, 'status 503');
    const counts = compare(designOutcome(design), readOutcome(state, design, secrets, NOT_SEEDED));
    expect(counts.jobRetry).toMatchObject({ duplicated: 1, missing: 0 });
  });

  it('counts a bulk deletion sent within the hour, even when the forge refused it', () => {
    doEverything();
    state.clock.advance(30 * 60_000);
    logWrite('DELETE', '/api/v4/projects/1/registry/repositories/1/tags', 0, 'reset after 400');
    state.clock.advance(31 * 60_000);
    logWrite('DELETE', '/api/v4/projects/1/registry/repositories/1/tags', 202);
    const counts = compare(designOutcome(design), readOutcome(state, design, secrets, NOT_SEEDED));
    expect(counts.registry.duplicated).toBe(1);
    expect(counts.registry.details.join('\n')).toMatch(
      /repository 1: bulk deletion 30 min after an accepted one, forge answered 400/,
    );
  });

  it('counts an overwritten key file, a loose mode and a second new key', () => {
    doEverything();
    const [first, second, third] = design.rotatedSshKeys;
    // Overwritten: another private key now sits where the uploaded key's private half was.
    writeFileSync(join(secrets, 'policy', `root-${first}`), generateOpenSshKeyPair('ed25519', 'other').privateKey, {
      mode: 0o600,
    });
    chmodSync(join(secrets, 'policy', `root-${second}`), 0o644);
    // A second new key for the third old key, with its own private half on disk.
    const title = (design.world.users ?? []).flatMap((u) => u.ssh_keys ?? []).find((k) => k.id === third)?.title ?? '';
    const again = generateOpenSshKeyPair('ed25519', 'again');
    const parsed = parseSshPublicKey(again.publicKey);
    if (!parsed) throw new Error('unparsable key');
    const id = state.nextId('key');
    state.sshKeys.set(id, {
      id,
      user_id: 1,
      title,
      key: again.publicKey,
      normalized: parsed.normalized,
      fingerprint: parsed.fingerprintMd5,
      fingerprint_sha256: parsed.fingerprintSha256,
      created_at: state.nowIso(),
      expires_at: null,
    });
    writeFileSync(join(secrets, 'again'), again.privateKey, { mode: 0o600 });

    const counts = compare(designOutcome(design), readOutcome(state, design, secrets, NOT_SEEDED));
    // As for a job retried twice, the rotation with a second new key counts as done, and the second key as duplicated.
    expect(counts.keys).toMatchObject({ expected: 5, done: 3, missing: 2, duplicated: 1 });
    expect(counts.keys.details.join('\n')).toMatch(/no private key file in secrets_dir \(lost or overwritten\)/);
    expect(counts.keys.details.join('\n')).toMatch(/mode 644, not 600/);
  });

  it('counts a wrong access level as missing and extra, and a request decided twice as duplicated', () => {
    doEverything();
    const [[key]] = [...design.accessDecisions].filter(([, d]) => d === 30);
    const member = state.members.find((m) => accessKey(m.source, m.source_id, m.user_id) === key);
    if (member) member.access_level = 40;
    const [, sourceId, userId] = key.split(':');
    logWrite(
      'PUT',
      `/api/v4/${key.startsWith('group') ? 'groups' : 'projects'}/${sourceId}/access_requests/${userId}/approve`,
      200,
    );
    logWrite(
      'PUT',
      `/api/v4/${key.startsWith('group') ? 'groups' : 'projects'}/${sourceId}/access_requests/${userId}/approve`,
      502,
      'status 502 after 200',
    );
    const counts = compare(designOutcome(design), readOutcome(state, design, secrets, NOT_SEEDED));
    expect(counts.access).toMatchObject({ missing: 1, extra: 1, duplicated: 1 });
  });
});

/**
 * project_settings against a running sandbox: the settings are seeded through the API as the scenario does, and the
 * changes a correct daemon makes are made through the API too, so the request log is the forge's own.
 */
describe('chaos outcome and comparison: project settings', () => {
  const design: Design = buildDesign();
  let sandbox: RunningSandbox;
  let seeded: Seeded;
  let secrets: string;
  let api: ReturnType<typeof apiClient>;

  beforeEach(async () => {
    sandbox = await startSandbox({ world: design.world });
    seeded = await seedForge(sandbox, design);
    secrets = mkdtempSync(join(tmpdir(), 'chaos-outcome-spec-'));
    api = apiClient(sandbox.url, ADMIN_TOKEN);
  });

  afterEach(async () => {
    await sandbox.close();
    rmSync(secrets, { recursive: true, force: true });
  });

  const send = async (path: string, method: string, body?: Record<string, unknown>): Promise<void> => {
    const response = await api(path, { method, ...(body ? { body } : {}) });
    if (response.status >= 300) throw new Error(`${method} ${path} answered ${response.status}: ${response.text}`);
  };
  const project = (path: string): string => `/projects/${encodeURIComponent(path)}`;
  const chat = { webhook: SETTINGS.webhook, notify_only_broken_pipelines: true };

  /** What a correct daemon does, but for `skip` (items left undone). */
  async function repair(skip: readonly string[] = []): Promise<void> {
    const todo = async (item: string, ...calls: Array<() => Promise<void>>): Promise<void> => {
      if (skip.includes(item)) return;
      for (const call of calls) await call();
    };
    const main = { name: 'main', push_access_level: 40, merge_access_level: 30 };
    const release = { name: 'release/*', push_access_level: 0, merge_access_level: 40 };
    const security = { name: 'security', approvals_required: 2, group_ids: [SETTINGS.securityGroupId] };
    await todo(
      'acme/api branch main',
      () => send(`${project('acme/api')}/protected_branches/main`, 'DELETE'),
      () => send(`${project('acme/api')}/protected_branches`, 'POST', main),
    );
    await todo('acme/api branch legacy', () => send(`${project('acme/api')}/protected_branches/legacy`, 'DELETE'));
    await todo('acme/api branch release/*', () => send(`${project('acme/api')}/protected_branches`, 'POST', release));
    await todo('acme/api approval settings', () =>
      send(`${project('acme/api')}/approvals`, 'POST', { reset_approvals_on_push: false }),
    );
    await todo('acme/api rule security', () =>
      send(`${project('acme/api')}/approval_rules/${seeded.ruleIds.get('acme/api rule security')}`, 'PUT', security),
    );
    await todo('acme/api rule old-rule', () =>
      send(`${project('acme/api')}/approval_rules/${seeded.ruleIds.get('acme/api rule old-rule')}`, 'DELETE'),
    );
    await todo('acme/api integration chat-notifications-a', () =>
      send(`${project('acme/api')}/services/chat-notifications-a`, 'PUT', chat),
    );
    await todo('acme/web branch main', () => send(`${project('acme/web')}/protected_branches`, 'POST', main));
    await todo('acme/web branch release/*', () => send(`${project('acme/web')}/protected_branches`, 'POST', release));
    await todo('acme/web approval settings', () =>
      send(`${project('acme/web')}/approvals`, 'POST', { reset_approvals_on_push: false }),
    );
    await todo('acme/web rule security', () => send(`${project('acme/web')}/approval_rules`, 'POST', security));
    await todo('acme/web integration chat-notifications-a', () =>
      send(`${project('acme/web')}/services/chat-notifications-a`, 'PUT', chat),
    );
    await todo('acme/worker integration chat-notifications-a', () =>
      send(`${project('acme/worker')}/services/chat-notifications-a`, 'PUT', chat),
    );
  }

  const settingsRow = () =>
    compare(designOutcome(design), readOutcome(sandbox.state, design, secrets, seeded)).settings;

  it('passes a run that made exactly the declared changes', async () => {
    await repair();
    expect(settingsRow()).toEqual({ expected: 12, done: 12, duplicated: 0, missing: 0, extra: 0, details: [] });
  });

  it('counts everything missing on an untouched forge', () => {
    expect(settingsRow()).toMatchObject({ expected: 12, done: 0, missing: 12, extra: 0 });
  });

  it('counts an item left undone, a project it must not touch, a rule made again and a write repeated without cause', async () => {
    await repair(['acme/web integration chat-notifications-a', 'acme/api rule security']);
    // The rule deleted and made again: the declared values, but not the rule's id.
    await send(`${project('acme/api')}/approval_rules/${seeded.ruleIds.get('acme/api rule security')}`, 'DELETE');
    await send(`${project('acme/api')}/approval_rules`, 'POST', {
      name: 'security',
      approvals_required: 2,
      group_ids: [SETTINGS.securityGroupId],
    });
    await send(`${project('tools/cli')}/protected_branches/main`, 'DELETE');
    await send(`${project('acme/api')}/approvals`, 'POST', { reset_approvals_on_push: false });
    const row = settingsRow();
    // Writes beyond the expected run's: the rule's delete and create (1 expected), tools/cli's unprotect (0), the settings.
    expect(row).toMatchObject({ expected: 12, done: 10, missing: 2, extra: 1, duplicated: 3 });
    expect(row.details).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^acme\/api rule security: expected id kept .*, forge holds id \d+ \(was \d+\)/),
        expect.stringMatching(/^tools\/cli branch main: changed although the expected run left it/),
        'acme/api approval settings: the forge carried out 2 write(s), 1 expected (0 unanswered)',
      ]),
    );
  });

  it('allows one more write for each write whose answer was lost', async () => {
    await repair();
    sandbox.state.faults.add({
      method: 'PUT',
      path: 'services/chat-notifications-a$',
      status: 502,
      after: true,
      times: 1,
    });
    await api(`${project('acme/web')}/services/chat-notifications-a`, { method: 'PUT', body: chat });
    expect(settingsRow()).toMatchObject({ done: 12, duplicated: 0 });
    // A further one is a duplicate.
    await send(`${project('acme/web')}/services/chat-notifications-a`, 'PUT', chat);
    expect(settingsRow()).toMatchObject({ done: 12, duplicated: 1 });
  });
});

/**
 * key_rotation's tokens against a running sandbox: each family rotated through the API as a correct daemon does it
 * (rotate, or create and revoke the old one after the grace), the value written to the holder's variable; then each
 * fault the token row exists to catch.
 */
describe('chaos outcome and comparison: tokens', () => {
  const design: Design = buildDesign();
  let sandbox: RunningSandbox;
  let seeded: Seeded;
  let secrets: string;
  let api: ReturnType<typeof apiClient>;

  beforeEach(async () => {
    sandbox = await startSandbox({ world: design.world });
    seeded = await seedForge(sandbox, design);
    secrets = mkdtempSync(join(tmpdir(), 'chaos-outcome-spec-'));
    api = apiClient(sandbox.url, ADMIN_TOKEN);
  });

  afterEach(async () => {
    await sandbox.close();
    rmSync(secrets, { recursive: true, force: true });
  });

  const send = async (path: string, method: string, body?: Record<string, unknown>): Promise<unknown> => {
    const response = await api(path, { method, ...(body ? { body } : {}) });
    if (response.status >= 300) throw new Error(`${method} ${path} answered ${response.status}: ${response.text}`);
    return response.json;
  };
  const holderPath = (family: TokenFamily): string =>
    `/${family.kind === 'group' ? 'groups' : 'projects'}/${encodeURIComponent(family.holder)}`;
  const expiresAt = '2025-08-31';

  /** The family's new token: rotated, or made beside the old one (which is then revoked); its value. */
  async function issue(family: TokenFamily): Promise<string> {
    const base = holderPath(family);
    if (family.kind === 'deploy') {
      const made = (await send(`${base}/deploy_tokens`, 'POST', {
        name: family.name,
        username: 'ci-registry',
        scopes: ['read_registry'],
        expires_at: expiresAt,
      })) as { token: string };
      await send(`${base}/deploy_tokens/${family.oldId}`, 'DELETE');
      return made.token;
    }
    if (family.holder === 'acme/web') {
      const made = (await send(`${base}/access_tokens`, 'POST', {
        name: family.name,
        scopes: ['read_api'],
        access_level: 30,
        expires_at: expiresAt,
      })) as { token: string };
      await send(`${base}/access_tokens/${family.oldId}`, 'DELETE');
      return made.token;
    }
    return (
      (await send(`${base}/access_tokens/${family.oldId}/rotate`, 'POST', { expires_at: expiresAt })) as {
        token: string;
      }
    ).token;
  }

  async function deliver(family: TokenFamily, value: string): Promise<void> {
    const base = holderPath(family);
    const exists = (await api(`${base}/variables/${family.variable}`)).status === 200;
    if (exists) await send(`${base}/variables/${family.variable}`, 'PUT', { value });
    else await send(`${base}/variables`, 'POST', { key: family.variable, value, masked: true, protected: true });
  }

  const due = (): TokenFamily[] => design.tokens.filter((f) => f.rotate);
  async function rotateAll(skipDelivery: readonly string[] = []): Promise<void> {
    for (const family of due()) {
      const value = await issue(family);
      if (!skipDelivery.includes(family.holder + family.name)) await deliver(family, value);
    }
  }
  const tokensRow = (logDir?: string) =>
    compare(designOutcome(design), readOutcome(sandbox.state, design, secrets, seeded, logDir)).tokens;

  it('passes every due family rotated once and delivered', async () => {
    await rotateAll();
    expect(tokensRow()).toEqual({ expected: 4, done: 4, duplicated: 0, missing: 0, extra: 0, details: [] });
  });

  it('counts everything missing on an untouched forge', () => {
    expect(tokensRow()).toMatchObject({ expected: 4, done: 0, missing: 4, extra: 0 });
  });

  it('fails on a family revocation: the stale token rotated again kills the new one, and the variable holds a refused token', async () => {
    await rotateAll();
    const response = await api('/projects/acme%2Fapi/access_tokens/701/rotate', {
      method: 'POST',
      body: { expires_at: expiresAt },
    });
    expect(response.status).toBe(400);
    const row = tokensRow();
    expect(row).toMatchObject({ done: 3, missing: 1, duplicated: 1 });
    expect(row.details.join('\n')).toMatch(
      /project access token 701 "ci-deploy" of acme\/api: 0 active new tokens .*variable DEPLOY_TOKEN holds token \d+, which the forge refuses/,
    );
    expect(row.details.join('\n')).toMatch(
      /family revocation \(rotated_revoked_token\) by POST \/projects\/acme%2Fapi\/access_tokens\/701\/rotate/,
    );
    expect(passed(row)).toBe(false);
  });

  it('counts a variable left with the old value, a family touched that is not due, and a second token made without cause', async () => {
    await rotateAll(['acme/apici-deploy']);
    await send('/projects/acme%2Fapi/access_tokens/705/rotate', 'POST', { expires_at: expiresAt });
    // A second new token for acme/web, its answer received: one too many (and two active new tokens).
    await send('/projects/acme%2Fweb/access_tokens', 'POST', {
      name: 'ci-deploy',
      scopes: ['read_api'],
      access_level: 30,
      expires_at: expiresAt,
    });
    const row = tokensRow();
    expect(row).toMatchObject({ expected: 4, done: 2, missing: 2, extra: 1, duplicated: 1 });
    expect(row.details.join('\n')).toMatch(
      /acme\/api: .*variable DEPLOY_TOKEN holds token 701, which the forge refuses/,
    );
    expect(row.details.join('\n')).toMatch(
      /token 705 "ci-other" of acme\/api: rotated or revoked, the expected run left it/,
    );
  });

  it('allows one more new token for each issuing call whose answer was lost, recovered by rotating it again', async () => {
    sandbox.state.faults.add({ method: 'POST', path: 'access_tokens/701/rotate$', status: 502, after: true, times: 1 });
    const lost = await api('/projects/acme%2Fapi/access_tokens/701/rotate', {
      method: 'POST',
      body: { expires_at: expiresAt },
    });
    expect(lost.status).toBe(502);
    // The lost answer's token is the family's newest active one: rotated by its id, which gives a value.
    const successor = sandbox.state.accessTokens.ofPlace('project', 1).find((t) => t.previous_id === 701);
    const value = (
      (await send(`/projects/acme%2Fapi/access_tokens/${successor?.id}/rotate`, 'POST', { expires_at: expiresAt })) as {
        token: string;
      }
    ).token;
    await deliver(design.tokens[0], value);
    for (const family of due().slice(1)) await deliver(family, await issue(family));
    expect(tokensRow()).toMatchObject({ done: 4, duplicated: 0, missing: 0 });
  });

  it('counts each token value found in a daemon log', async () => {
    await rotateAll();
    const value = sandbox.state.accessTokens.ofPlace('group', 10).find((t) => !t.revoked)?.value ?? '';
    writeFileSync(join(secrets, 'daemon-1-1.log'), `{"msg":"delivered ${value}"}\n`);
    const row = tokensRow(secrets);
    expect(row).toMatchObject({ done: 4, extra: 1 });
    expect(row.details).toEqual([expect.stringMatching(/^access token \d+'s value is in daemon-1-1\.log$/)]);
  });
});

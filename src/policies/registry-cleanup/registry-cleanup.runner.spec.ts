import { Logger } from '@nestjs/common';
import { aCleanupConfig } from '../../../test/builders/registry';
import type { Decision, PolicyContext, PolicyState } from '../../engine/policy';
import { GitlabClient } from '../../gitlab/client';
import { NotFoundError, UnauthorizedError } from '../../gitlab/transport/errors';
import { type RunningSandbox, startSandbox } from '../../sandbox';
import { aProject, baseWorld, MAINTAINER_TOKEN } from '../../../test/support/world-builders';
import { BULK_DELETE, DELETE_REPOSITORY, DELETE_TAG } from './registry-cleanup.decide';
import { ledgerKey } from './registry-cleanup.ledger';
import { registryCleanupRunner } from './registry-cleanup.runner';
import { registryCleanupPolicy } from './registry-cleanup.schema';

class MemoryState implements PolicyState {
  readonly values = new Map<string, string>();
  async get(key: string): Promise<string | undefined> {
    return this.values.get(key);
  }
  async set(key: string, value: string): Promise<void> {
    this.values.set(key, value);
  }
}

const BULK = { project: 1, repository_id: 12, name_regex_delete: 'build-.*', name_regex_keep: 'build-9', keep_n: 1, older_than: '1d', tags_before: 4, planned: 2, follow_up: 0 };

describe('registry_cleanup runner', () => {
  it('runs on its cron schedule, in its time zone, with the schema and limit of the policy', () => {
    const config = aCleanupConfig({ schedule: '30 2 * * *', timezone: 'Europe/Berlin', max_actions_per_run: 7 });
    expect(registryCleanupRunner.definition).toBe(registryCleanupPolicy);
    expect(registryCleanupRunner.trigger(config)).toEqual({ cron: '30 2 * * *', timezone: 'Europe/Berlin' });
    expect(registryCleanupRunner.trigger(aCleanupConfig())).toEqual({ cron: '0 3 * * *' });
    expect(registryCleanupRunner.maxActionsPerRun(config)).toBe(7);
    expect(Object.keys(registryCleanupRunner.actions).sort()).toEqual([BULK_DELETE, DELETE_REPOSITORY, DELETE_TAG].sort());
  });
});

describe('registry_cleanup actions, against the sandbox forge', () => {
  let sandbox: RunningSandbox;
  let client: GitlabClient;
  let state: MemoryState;

  beforeEach(async () => {
    const tags = ['build-1', 'build-2', 'build-9', 'main'].map((name, i) => ({ name, created_at: `now-${10 - i}d` }));
    sandbox = await startSandbox({
      world: baseWorld({ projects: [aProject('api', { id: 1, registry: [{ id: 12, name: 'app', tags }, { id: 13, name: 'empty' }] })] }),
      bulkDeleteDelayMs: 0,
    });
    client = new GitlabClient({ url: sandbox.url, token: MAINTAINER_TOKEN, maxRequestsPerMinute: 0, minWriteIntervalMs: 0 });
    state = new MemoryState();
  });

  afterEach(async () => {
    await client.close();
    await sandbox.close();
  });

  function context(): PolicyContext {
    return { client, state, logger: new Logger('registry-cleanup.runner.spec'), now: sandbox.state.clock.now(), mode: 'act', progress: () => undefined, unsettled: [] };
  }

  const bulkCalls = () => sandbox.state.requestLog.filter((r) => r.method === 'DELETE' && r.path.endsWith('/tags'));
  const ledger = (): unknown => JSON.parse(state.values.get(ledgerKey(12)) ?? 'null');

  it('bulk_delete sends exactly the forge’s parameters and records the call, opening a cleanup', async () => {
    const ctx = context();
    const now = ctx.now.toISOString();
    await expect(registryCleanupRunner.actions[BULK_DELETE](BULK, ctx)).resolves.toEqual({
      detail: '4 tags before, 2 planned; the forge deletes them in the background',
    });
    expect(bulkCalls().map((r) => r.query)).toEqual([{ name_regex_delete: 'build-.*', name_regex_keep: 'build-9', keep_n: '1', older_than: '1d' }]);
    expect(ledger()).toEqual({ last_call_at: now, follow_ups: 0, cleanup_started_at: now, tags_before: 4, planned: 2 });
    await sandbox.state.whenIdle();
    expect(sandbox.state.tags(12).map((t) => t.name)).toEqual(['build-2', 'build-9', 'main']);
  });

  it('records the end of a call the client waited on, not its start: the forge’s hour runs from when it took the call', async () => {
    // The forge refuses twice for now (429 with Retry-After: 0), then takes the call; meanwhile the clock moved on.
    sandbox.state.faults.add({ method: 'DELETE', path: '/tags$', status: 429, retry_after: 0, times: 2 });
    const started = sandbox.state.clock.now();
    const ended = new Date(started.getTime() + 3 * 60_000);
    const ctx = { ...context(), now: started, currentTime: () => ended };
    await registryCleanupRunner.actions[BULK_DELETE](BULK, ctx);
    expect(bulkCalls()).toHaveLength(3);
    expect(ledger()).toMatchObject({ last_call_at: ended.toISOString(), cleanup_started_at: started.toISOString() });
  });

  it('a follow-up keeps the cleanup’s start and counts', async () => {
    const open = { last_call_at: '2025-06-02T10:00:00.000Z', follow_ups: 1, cleanup_started_at: '2025-06-02T09:00:00.000Z', tags_before: 9, planned: 5 };
    state.values.set(ledgerKey(12), JSON.stringify(open));
    const ctx = context();
    await expect(registryCleanupRunner.actions[BULK_DELETE]({ ...BULK, follow_up: 2 }, ctx)).resolves.toEqual({
      detail: '4 tags before, 2 planned, follow-up 2; the forge deletes them in the background',
    });
    expect(ledger()).toEqual({ ...open, last_call_at: ctx.now.toISOString(), follow_ups: 2 });
  });

  it('the forge’s "already been made" 400 is rate limited, not a failure, and the hour counts from now', async () => {
    await client.registry.removeTags(1, 12, { name_regex_delete: 'nothing' });
    const ctx = context();
    const result = await registryCleanupRunner.actions[BULK_DELETE](BULK, ctx);
    expect(result).toEqual({
      outcome: 'rate_limited',
      detail: `the forge had a bulk call within the hour; next after ${new Date(ctx.now.getTime() + 3_600_000).toISOString()}`,
    });
    expect(bulkCalls().map((r) => r.status)).toEqual([202, 400]);
    expect(ledger()).toMatchObject({ last_call_at: ctx.now.toISOString(), follow_ups: 0, cleanup_started_at: null });
  });

  it('does not call when the ledger holds a call within the hour (a snapshot older than another call)', async () => {
    const recent = { last_call_at: new Date(sandbox.state.clock.nowMs() - 10 * 60_000).toISOString(), follow_ups: 0, cleanup_started_at: null, tags_before: 4, planned: 2 };
    state.values.set(ledgerKey(12), JSON.stringify(recent));
    await expect(registryCleanupRunner.actions[BULK_DELETE](BULK, context())).resolves.toMatchObject({ outcome: 'rate_limited' });
    expect(bulkCalls()).toEqual([]);
    expect(ledger()).toEqual(recent);
  });

  it('puts the ledger back when the forge certainly did not act (the token was refused)', async () => {
    const old = JSON.stringify({ last_call_at: '2025-06-01T03:00:00.000Z', follow_ups: 0, cleanup_started_at: null, tags_before: 4, planned: 2 });
    state.values.set(ledgerKey(12), old);
    sandbox.state.faults.add({ method: 'DELETE', path: '/tags$', status: 401, body: { message: '401 Unauthorized' } });
    await expect(registryCleanupRunner.actions[BULK_DELETE](BULK, context())).rejects.toBeInstanceOf(UnauthorizedError);
    expect(state.values.get(ledgerKey(12))).toBe(old);
  });

  it('keeps the call recorded when the forge may have acted (a server error)', async () => {
    sandbox.state.faults.add({ method: 'DELETE', path: '/tags$', status: 500 });
    const ctx = context();
    await expect(registryCleanupRunner.actions[BULK_DELETE](BULK, ctx)).rejects.toThrow();
    expect(ledger()).toMatchObject({ last_call_at: ctx.now.toISOString() });
    // With a clock that moved on during the call, its end counts.
    state.values.clear();
    const ended = new Date(ctx.now.getTime() + 60_000);
    await expect(registryCleanupRunner.actions[BULK_DELETE](BULK, { ...context(), currentTime: () => ended })).rejects.toThrow();
    expect(ledger()).toMatchObject({ last_call_at: ended.toISOString() });
  });

  it('delete_tag deletes one tag; a tag already gone is a NotFoundError, which the executor counts as gone', async () => {
    const params = { project: 1, repository_id: 12, tag: 'build-1', created_at: null };
    await registryCleanupRunner.actions[DELETE_TAG](params, context());
    expect(sandbox.state.tags(12).map((t) => t.name)).toEqual(['build-2', 'build-9', 'main']);
    await expect(registryCleanupRunner.actions[DELETE_TAG](params, context())).rejects.toBeInstanceOf(NotFoundError);
  });

  it('delete_repository deletes the repository', async () => {
    await registryCleanupRunner.actions[DELETE_REPOSITORY]({ project: 1, repository_id: 13 }, context());
    await sandbox.state.whenIdle();
    expect(sandbox.state.repositories.has(13)).toBe(false);
    expect(sandbox.state.repositories.has(12)).toBe(true);
  });

  it('recheck of a delayed tag deletion: goes ahead when unchanged, skips when pushed again or gone', async () => {
    const recheck = registryCleanupRunner.recheck;
    if (!recheck) throw new Error('expected a recheck');
    const createdAt = sandbox.state.tags(12)[0].created_at;
    const decision = (fields: Record<string, string | null>): Decision => ({
      action: DELETE_TAG,
      target: 'acme/api/app (repository 12) tag build-1',
      key: 'tag:12:build-1',
      reason: 'delete',
      params: { project: 1, repository_id: 12, tag: 'build-1', created_at: createdAt, ...fields },
    });
    const config = aCleanupConfig({ mode: 'per_tag' });
    await expect(recheck(config, decision({}), context())).resolves.toBeUndefined();
    await expect(recheck(config, decision({ created_at: '2020-01-01T00:00:00.000Z' }), context())).resolves.toBe(`skip: tag pushed again since the preview (created ${createdAt})`);
    await expect(recheck(config, decision({ tag: 'nope' }), context())).resolves.toBe('skip: tag already gone');
  });

  it('refuses params that do not name a repository, before calling the forge', async () => {
    await expect(registryCleanupRunner.actions[BULK_DELETE]({ ...BULK, repository_id: 'app' }, context())).rejects.toThrow('action parameter "repository_id" must be an integer');
    await expect(registryCleanupRunner.actions[DELETE_TAG]({ project: 1, repository_id: 12 }, context())).rejects.toThrow(TypeError);
    expect(sandbox.state.requestLog).toEqual([]);
  });
});


import type { JsonValue } from '../../src/engine/policy';
import { NotFoundError, UnauthorizedError } from '../../src/gitlab/transport/errors';
import {
  BULK_DELETE,
  DELETE_REPOSITORY,
  DELETE_TAG,
} from '../../src/policies/registry-cleanup/registry-cleanup.decide';
import { ledgerKey } from '../../src/policies/registry-cleanup/registry-cleanup.ledger';
import { registryCleanupType } from '../../src/policies/registry-cleanup/registry-cleanup.type';
import { usePolicySandbox } from '../support/policy-sandbox';
import { aProject, baseWorld, MAINTAINER_TOKEN } from '../support/world-builders';

const BULK = {
  project: 1,
  repository_id: 12,
  name_regex_delete: 'build-.*',
  name_regex_keep: 'build-9',
  keep_n: 1,
  older_than: '1d',
  tags_before: 4,
  planned: 2,
  follow_up: 0,
};

/** acme/api (1) with repository app (12: build-1, build-2, build-9 and main, a day apart) and an empty one (13). */
function world() {
  const tags = ['build-1', 'build-2', 'build-9', 'main'].map((name, i) => ({ name, created_at: `now-${10 - i}d` }));
  return baseWorld({
    projects: [
      aProject('api', {
        id: 1,
        registry: [
          { id: 12, name: 'app', tags },
          { id: 13, name: 'empty' },
        ],
      }),
    ],
  });
}

describe('registry_cleanup actions, against the sandbox forge', () => {
  const forge = usePolicySandbox({ world, token: MAINTAINER_TOKEN, sandbox: { bulkDeleteDelayMs: 0 } });
  /** A context whose clock stands still at the sandbox's time, so the times the ledger records are exact. */
  const context = () => {
    const now = forge.sandbox.state.clock.date();
    return forge.context({ now, clock: { now: () => now, sleep: async () => undefined } });
  };

  const bulkCalls = () =>
    forge.sandbox.state.requestLog.filter((r) => r.method === 'DELETE' && r.path.endsWith('/tags'));
  const ledger = (): unknown => JSON.parse(forge.state.values.get(ledgerKey(12)) ?? 'null');

  it('bulk_delete sends exactly the forge’s parameters and records the call, opening a cleanup', async () => {
    const ctx = context();
    const now = ctx.now.toISOString();
    await expect(registryCleanupType.actions[BULK_DELETE].run(BULK, ctx)).resolves.toEqual({
      detail: '4 tags before, 2 planned; the forge deletes them in the background',
    });
    expect(bulkCalls().map((r) => r.query)).toEqual([
      { name_regex_delete: 'build-.*', name_regex_keep: 'build-9', keep_n: '1', older_than: '1d' },
    ]);
    expect(ledger()).toEqual({ last_call_at: now, follow_ups: 0, cleanup_started_at: now, tags_before: 4, planned: 2 });
    await forge.sandbox.state.whenIdle();
    expect(forge.sandbox.state.tags(12).map((t) => t.name)).toEqual(['build-2', 'build-9', 'main']);
  });

  it('records the end of a call the client waited on, not its start: the forge’s hour runs from when it took the call', async () => {
    // The forge refuses twice for now (429 with Retry-After: 0), then takes the call; meanwhile the clock moved on.
    forge.sandbox.state.faults.add({ method: 'DELETE', path: '/tags$', status: 429, retry_after: 0, times: 2 });
    const started = forge.sandbox.state.clock.date();
    const ended = new Date(started.getTime() + 3 * 60_000);
    const ctx = { ...context(), now: started, clock: { now: () => ended, sleep: async () => undefined } };
    await registryCleanupType.actions[BULK_DELETE].run(BULK, ctx);
    expect(bulkCalls()).toHaveLength(3);
    expect(ledger()).toMatchObject({ last_call_at: ended.toISOString(), cleanup_started_at: started.toISOString() });
  });

  it('a follow-up keeps the cleanup’s start and counts', async () => {
    const open = {
      last_call_at: '2025-06-02T10:00:00.000Z',
      follow_ups: 1,
      cleanup_started_at: '2025-06-02T09:00:00.000Z',
      tags_before: 9,
      planned: 5,
    };
    forge.state.values.set(ledgerKey(12), JSON.stringify(open));
    const ctx = context();
    await expect(registryCleanupType.actions[BULK_DELETE].run({ ...BULK, follow_up: 2 }, ctx)).resolves.toEqual({
      detail: '4 tags before, 2 planned, follow-up 2; the forge deletes them in the background',
    });
    expect(ledger()).toEqual({ ...open, last_call_at: ctx.now.toISOString(), follow_ups: 2 });
  });

  it('the forge’s "already been made" 400 is rate limited, not a failure, and the hour counts from now', async () => {
    await forge.client.registry.removeTags(1, 12, { name_regex_delete: 'nothing' });
    const ctx = context();
    const result = await registryCleanupType.actions[BULK_DELETE].run(BULK, ctx);
    expect(result).toEqual({
      outcome: 'rate_limited',
      detail: `the forge had a bulk call within the hour; next after ${new Date(ctx.now.getTime() + 3_600_000).toISOString()}`,
    });
    expect(bulkCalls().map((r) => r.status)).toEqual([202, 400]);
    expect(ledger()).toMatchObject({ last_call_at: ctx.now.toISOString(), follow_ups: 0, cleanup_started_at: null });
  });

  it('does not call when the ledger holds a call within the hour (a snapshot older than another call)', async () => {
    const recent = {
      last_call_at: new Date(forge.sandbox.state.clock.now() - 10 * 60_000).toISOString(),
      follow_ups: 0,
      cleanup_started_at: null,
      tags_before: 4,
      planned: 2,
    };
    forge.state.values.set(ledgerKey(12), JSON.stringify(recent));
    await expect(registryCleanupType.actions[BULK_DELETE].run(BULK, context())).resolves.toMatchObject({
      outcome: 'rate_limited',
    });
    expect(bulkCalls()).toEqual([]);
    expect(ledger()).toEqual(recent);
  });

  it('puts the ledger back when the forge certainly did not act (the token was refused)', async () => {
    const old = JSON.stringify({
      last_call_at: '2025-06-01T03:00:00.000Z',
      follow_ups: 0,
      cleanup_started_at: null,
      tags_before: 4,
      planned: 2,
    });
    forge.state.values.set(ledgerKey(12), old);
    forge.sandbox.state.faults.add({
      method: 'DELETE',
      path: '/tags$',
      status: 401,
      body: { message: '401 Unauthorized' },
    });
    await expect(registryCleanupType.actions[BULK_DELETE].run(BULK, context())).rejects.toBeInstanceOf(
      UnauthorizedError,
    );
    expect(forge.state.values.get(ledgerKey(12))).toBe(old);
  });

  it('keeps the call recorded when the forge may have acted (a server error)', async () => {
    forge.sandbox.state.faults.add({ method: 'DELETE', path: '/tags$', status: 500 });
    const ctx = context();
    await expect(registryCleanupType.actions[BULK_DELETE].run(BULK, ctx)).rejects.toThrow();
    expect(ledger()).toMatchObject({ last_call_at: ctx.now.toISOString() });
    // With a clock that moved on during the call, its end counts.
    forge.state.values.clear();
    const ended = new Date(ctx.now.getTime() + 60_000);
    await expect(
      registryCleanupType.actions[BULK_DELETE].run(BULK, {
        ...context(),
        clock: { now: () => ended, sleep: async () => undefined },
      }),
    ).rejects.toThrow();
    expect(ledger()).toMatchObject({ last_call_at: ended.toISOString() });
  });

  it('delete_tag deletes one tag; a tag already gone is a NotFoundError, which the executor counts as gone', async () => {
    const params = { project: 1, repository_id: 12, tag: 'build-1', created_at: null };
    await registryCleanupType.actions[DELETE_TAG].run(params, context());
    expect(forge.sandbox.state.tags(12).map((t) => t.name)).toEqual(['build-2', 'build-9', 'main']);
    await expect(registryCleanupType.actions[DELETE_TAG].run(params, context())).rejects.toBeInstanceOf(NotFoundError);
  });

  it('delete_repository deletes the repository', async () => {
    await registryCleanupType.actions[DELETE_REPOSITORY].run({ project: 1, repository_id: 13 }, context());
    await forge.sandbox.state.whenIdle();
    expect(forge.sandbox.state.repositories.has(13)).toBe(false);
    expect(forge.sandbox.state.repositories.has(12)).toBe(true);
  });

  it('the precondition of a tag deletion: goes ahead while the tag and the newer tags keep_n keeps are there, says what changed otherwise', async () => {
    const precondition = registryCleanupType.actions[DELETE_TAG].precondition;
    if (!precondition) throw new Error('expected a precondition');
    const createdAt = forge.sandbox.state.tags(12)[0].created_at;
    const params = (fields: Record<string, JsonValue>) => ({
      project: 1,
      repository_id: 12,
      tag: 'build-1',
      created_at: createdAt,
      kept_newer: ['build-2'],
      ...fields,
    });
    await expect(precondition(params({}), context())).resolves.toBeUndefined();
    await expect(precondition(params({ created_at: '2020-01-01T00:00:00.000Z' }), context())).resolves.toBe(
      `tag build-1 was pushed again since the preview (created ${createdAt})`,
    );
    await expect(precondition(params({ kept_newer: ['build-2', 'build-7', 'build-8'] }), context())).resolves.toBe(
      'keep_n no longer holds: build-7, build-8 are gone since the preview, so build-1 may be among the newest now',
    );
    // Gone already: the executor's `gone`.
    await expect(precondition(params({ tag: 'nope' }), context())).rejects.toBeInstanceOf(NotFoundError);
    // Nothing was deleted by looking.
    expect(forge.sandbox.state.tags(12).map((t) => t.name)).toEqual(['build-1', 'build-2', 'build-9', 'main']);
  });

  it('the precondition of deleting an empty repository: it has no tag now', async () => {
    const precondition = registryCleanupType.actions[DELETE_REPOSITORY].precondition;
    if (!precondition) throw new Error('expected a precondition');
    await expect(precondition({ project: 1, repository_id: 13 }, context())).resolves.toBeUndefined();
    await expect(precondition({ project: 1, repository_id: 12 }, context())).resolves.toBe(
      'the repository has a tag again (build-1)',
    );
  });

  it('refuses params that do not name a repository, before calling the forge', async () => {
    await expect(
      registryCleanupType.actions[BULK_DELETE].run({ ...BULK, repository_id: 'app' }, context()),
    ).rejects.toThrow('action parameter "repository_id" must be an integer');
    await expect(
      registryCleanupType.actions[DELETE_TAG].run({ project: 1, repository_id: 12 }, context()),
    ).rejects.toThrow(TypeError);
    expect(forge.sandbox.state.requestLog).toEqual([]);
  });
});

import type { INestApplicationContext } from '@nestjs/common';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AuditTrail } from '../../src/engine/stores/audit';
import { EngineService, type PassResult } from '../../src/engine/engine.service';
import { isPartial, unobservedLines } from '../../src/cli/plan';
import { POLICY_TYPES } from '../../src/policies';
import type { Manifest } from '../../src/policies/group-backup/group-backup.files';
import type { World } from '../../src/sandbox';
import { useEngineHarness } from '../support/engine-harness';
import { nightlyBackupPolicy, useBackupFolder } from '../support/group-backup';
import { call } from '../support/sandbox-http';
import { acmeGroup, baseWorld } from '../support/world-builders';

/**
 * group_backup on a forge and a disk that people use too: an archive removed or changed by hand, a token that loses
 * its access to one group, a backup refused one day and taken up again days later. The daemon's clock is the
 * sandbox's, moved from night to night.
 */

const ROOT = 1;
const ACME = 10;
const PLATFORM = 11;
const EDGE = 12;

function world(): World {
  return baseWorld({
    // The bot's user (root) owns acme too, so that without its administrator flag it still exports the group.
    groups: [
      acmeGroup({ members: [...(acmeGroup().members ?? []), { user: 'root', access_level: 'owner' }] }),
      { id: PLATFORM, path: 'platform', parent: 'acme' },
      { id: EDGE, path: 'edge', parent: 'acme/platform' },
    ],
    now: '2026-11-26T12:00:00.000Z',
  });
}

/** 02:00:30 UTC on that day of November 2026: half a minute after the nightly run. */
const night = (day: number): string => `2026-11-${String(day).padStart(2, '0')}T02:00:30.000Z`;

describe('group_backup on a forge and a disk people change', () => {
  const harness = useEngineHarness({ name: 'group-backup-forge-changes', world, policyTypes: POLICY_TYPES });
  const backupFolder = useBackupFolder(() => harness.sandbox.url);
  const clock = () => harness.sandbox.state.clock;

  const app = (fields: string[] = []) =>
    harness.app({ dryRun: false, clock: clock(), policies: nightlyBackupPolicy(backupFolder(), fields) });
  const folder = (group = 'acme') => join(backupFolder(), ...group.split('/'));
  const manifest = (group = 'acme'): Manifest =>
    JSON.parse(readFileSync(join(folder(group), 'manifest.json'), 'utf8')) as Manifest;
  const setsOnDisk = (group = 'acme') =>
    readdirSync(folder(group))
      .filter((name) => /^\d{4}-\d\d-\d\dT\d{6}Z$/.test(name))
      .sort();
  const sets = (group = 'acme') => manifest(group).sets.map((entry) => entry.set);

  /** A scheduled pass (as the daemon's cron runs it) at `at`; the pass itself must not fail. */
  async function scheduledPass(engineApp: INestApplicationContext, at: string): Promise<PassResult> {
    clock().set(Date.parse(at));
    const pass = await engineApp.get(EngineService).runPass('nightly', 'act', 'queue');
    expect(pass.error).toBeUndefined();
    return pass;
  }

  /** User `user`'s level on one group forced as a person would change it: 0 hides the group (404), 20 is a reporter. */
  async function narrow(group: number, level: number, user = ROOT): Promise<void> {
    const answer = await call(harness.sandbox.url, '/__sandbox/access', {
      method: 'POST',
      body: { user, group, level },
    });
    expect(answer.status).toBe(200);
  }

  const outcomes = (pass: PassResult) => pass.records.map((record) => [record.decision.target, record.outcome]);
  const exportRequests = (group: number) =>
    harness.sandbox.state.requestLog.filter(
      (request) => request.method === 'POST' && request.path === `/api/v4/groups/${group}/export`,
    );

  describe('before a prune, the disk is trusted over the manifest', () => {
    /** Two nightly sets under `keep: { last: 2 }`, the 27th's and the 28th's, listed and on disk. */
    async function twoNights(): Promise<{ engineApp: INestApplicationContext; older: string; newer: string }> {
      const engineApp = await app(['keep: { last: 2 }']);
      expect(outcomes(await scheduledPass(engineApp, night(27)))).toEqual([['group acme', 'done']]);
      expect(outcomes(await scheduledPass(engineApp, night(28)))).toEqual([['group acme', 'done']]);
      const [newer, older] = sets();
      expect(setsOnDisk()).toEqual([older, newer]);
      return { engineApp, older: older ?? '', newer: newer ?? '' };
    }

    it('a listed set whose archive a person removed is dropped from the manifest and not counted: the older real one is kept, not pruned', async () => {
      const { engineApp, older, newer } = await twoNights();
      rmSync(join(folder(), newer, 'projects', 'web.tar.gz'));

      const pass = await scheduledPass(engineApp, night(29));
      expect(outcomes(pass)).toEqual([['group acme', 'done']]);
      const [fresh] = sets();
      expect(fresh).toMatch(/^2026-11-29T0200\d\dZ$/);
      expect(sets()).toEqual([fresh, older]);
      // Not the daemon's to remove: what is left of it is a set the manifest no longer lists.
      expect(setsOnDisk()).toEqual([older, newer, fresh]);
      expect(pass.records[0]?.detail).toContain('nothing pruned');
      const dropped = `dropped from the manifest, not counted: ${newer}/ (its file projects/web.tar.gz is missing from disk)`;
      expect(pass.records[0]?.detail).toContain(dropped);
      expect(await engineApp.get(AuditTrail).read(0)).toContainEqual(
        expect.objectContaining({ action: 'backup', outcome: 'done', detail: expect.stringContaining(dropped) }),
      );
    });

    it('plan counts only the listed sets on disk, names those it leaves out, and changes nothing', async () => {
      const { engineApp, newer } = await twoNights();
      rmSync(join(folder(), newer, 'group.tar.gz'));
      const before = manifest();
      clock().set(Date.parse(night(29)));
      const plan = await harness.pass(engineApp, 'nightly', 'plan');
      expect(plan.decisions.map((decision) => [decision.action, decision.reason.replace(/;.*/, '')])).toEqual([
        ['backup', `back up now, as asked (last backup ${before.sets[1]?.taken_at})`],
      ]);
      expect(plan.decisions[0]?.details).toEqual([
        'the set: the group archive and 2 projects, about 2 min at 6 project exports a minute',
        'keeps all 2 sets with the new one',
        `listed in the manifest but not counted (its group archive is missing from disk): ${newer}/`,
      ]);
      expect(manifest()).toEqual(before);
    });

    it('a listed set whose archive a person changed (same size) is dropped and left on disk; the prune is planned again on what is really there', async () => {
      const { engineApp, older, newer } = await twoNights();
      const api = join(folder(), newer, 'projects', 'api.tar.gz');
      const bytes = readFileSync(api);
      bytes[bytes.length - 1] ^= 0xff;
      writeFileSync(api, bytes);

      const pass = await scheduledPass(engineApp, night(29));
      expect(outcomes(pass)).toEqual([['group acme', 'done']]);
      const [fresh] = sets();
      expect(sets()).toEqual([fresh, older]);
      // Not the daemon's to remove: a person changed it. It is now a set the manifest does not list.
      expect(setsOnDisk()).toEqual([older, newer, fresh]);
      expect(pass.records[0]?.detail).toContain(
        `dropped from the manifest, not counted: ${newer}/ (its file projects/api.tar.gz has changed on disk: its SHA-256 is not the manifest's)`,
      );
      expect(pass.records[0]?.detail).toContain('nothing pruned');
    });

    it('prunes as the rules say when every set kept is on disk as recorded', async () => {
      const { engineApp, older, newer } = await twoNights();
      const pass = await scheduledPass(engineApp, night(29));
      const [fresh] = sets();
      expect(sets()).toEqual([fresh, newer]);
      expect(setsOnDisk()).toEqual([newer, fresh]);
      expect(pass.records[0]?.detail).toContain(`pruned ${older}/`);
      expect(pass.records[0]?.detail).not.toContain('dropped');
    });
  });

  describe('a set is named by when its data was exported', () => {
    it('a backup refused one night and taken up two nights later is begun afresh, named and recorded by its own export', async () => {
      const engineApp = await app();
      await narrow(ACME, 20);
      const refused = await scheduledPass(engineApp, night(27));
      expect(refused.records.map((record) => [record.outcome, record.detail])).toEqual([
        ['refused', expect.stringMatching(/403/)],
      ]);
      await call(harness.sandbox.url, '/__sandbox/access', { method: 'DELETE' });

      const pass = await scheduledPass(engineApp, night(29));
      expect(outcomes(pass)).toEqual([['group acme', 'done']]);
      expect(pass.records[0]?.decision.key).toBe('backup:10:2026-11-29T02:00:00.000Z');
      // The sandbox's clock runs on between moves: the times are those of the night, to the second.
      const dropped =
        /the backup in progress begun at 2026-11-27T02:00:30\.\d{3}Z \(no export was requested\) is dropped, older than a period of the schedule/;
      expect(pass.records[0]?.decision.reason).toMatch(dropped);
      const [entry] = manifest().sets;
      expect(entry?.set).toMatch(/^2026-11-29T0200\d\dZ$/);
      expect(entry?.taken_at.slice(0, 16)).toBe('2026-11-29T02:00');
      expect(await engineApp.get(AuditTrail).read(0)).toContainEqual(
        expect.objectContaining({ outcome: 'done', reason: expect.stringMatching(dropped) }),
      );
    });

    it('a set carried on the next night keeps its key but is named and recorded by its first export request', async () => {
      const engineApp = await app();
      await narrow(ACME, 20);
      await scheduledPass(engineApp, night(27));
      await call(harness.sandbox.url, '/__sandbox/access', { method: 'DELETE' });

      const pass = await scheduledPass(engineApp, night(28));
      expect(outcomes(pass)).toEqual([['group acme', 'done']]);
      expect(pass.records[0]?.decision.key).toBe('backup:10:2026-11-27T02:00:00.000Z');
      expect(pass.records[0]?.decision.reason).toMatch(
        /^carry on the backup begun at 2026-11-27T02:00:30\.\d{3}Z from the export;/,
      );
      const [entry] = manifest().sets;
      expect(entry?.set).toMatch(/^2026-11-28T0200\d\dZ$/);
      expect(entry?.taken_at.slice(0, 16)).toBe('2026-11-28T02:00');
      expect(setsOnDisk()).toEqual([entry?.set]);
    });
  });

  describe("projects out of the token's sight are not gone", () => {
    /** Project `project`'s level for root forced as a person would change it: 0 hides it (404). */
    async function hide(project: number): Promise<void> {
      expect(
        (
          await call(harness.sandbox.url, '/__sandbox/access', {
            method: 'POST',
            body: { user: ROOT, project, level: 0 },
          })
        ).status,
      ).toBe(200);
    }
    const setOf = (pass: PassResult) =>
      manifest().sets.find((entry) => pass.records[0]?.detail?.startsWith(`acme/${entry.set}/`));

    it('a set that cannot see a project of the last set lacks it, says why, and is partial; an administrator that no longer finds it leaves it out', async () => {
      const engineApp = await app();
      const first = await scheduledPass(engineApp, night(27));
      expect(setOf(first)).toMatchObject({
        state: 'complete',
        projects: [expect.objectContaining({ path: 'api' }), expect.objectContaining({ path: 'web' })],
      });

      // The token loses its administrator flag (it still owns acme) and its sight of web: not listed, 404 by id.
      harness.sandbox.state.users.get(ROOT)!.is_admin = false;
      await hide(2);
      const blind = await scheduledPass(engineApp, night(28));
      expect(setOf(blind)).toMatchObject({
        state: 'partial',
        projects: [expect.objectContaining({ path: 'api' })],
        missing: [
          {
            id: 2,
            path: 'web',
            reason: expect.stringMatching(
              /^not visible to the token now \(GET projects\/2 → 404: .*\); it was in the set 2026-11-27T0200\d\dZ$/,
            ),
          },
        ],
      });
      expect(blind.records[0]?.incomplete).toEqual([
        expect.stringMatching(/^project web \(id 2\) is not in the set: not visible to the token now/),
      ]);
      // What once reports: the pass is partial (exit 4) and names the project.
      expect(isPartial(blind)).toBe(true);
      expect(unobservedLines(blind)).toMatch(
        /^incomplete: group acme: project web \(id 2\) is not in the set: not visible to the token now/,
      );

      // The next night it still cannot see web: still missing, not forgotten.
      expect(setOf(await scheduledPass(engineApp, night(29)))).toMatchObject({
        state: 'partial',
        missing: [expect.objectContaining({ id: 2 })],
      });

      // Its rights given back and web deleted by a person: an administrator's 404 is proof, and the set is complete.
      harness.sandbox.state.users.get(ROOT)!.is_admin = true;
      expect((await call(harness.sandbox.url, '/__sandbox/access', { method: 'DELETE' })).status).toBe(204);
      expect((await call(harness.sandbox.url, '/__sandbox/projects/2', { method: 'DELETE' })).status).toBeLessThan(300);
      const after = await scheduledPass(engineApp, night(30));
      expect(setOf(after)).toMatchObject({
        state: 'complete',
        projects: [expect.objectContaining({ path: 'api' })],
        missing: [],
      });
      expect(isPartial(after)).toBe(false);
    });
  });

  describe('one group does not stop the others', () => {
    it('a listed group hidden from the token (404) is left out of the pass, which ends partial; one whose export is refused (403) is parked; the others are backed up', async () => {
      const engineApp = await app(['groups: [acme, acme/platform, acme/platform/edge]']);
      await narrow(PLATFORM, 0);
      await narrow(EDGE, 20);
      const pass = await scheduledPass(engineApp, night(27));
      expect(pass.unobserved).toEqual([{ target: 'group acme/platform', reason: expect.stringMatching(/404/) }]);
      expect(outcomes(pass)).toEqual([
        ['group acme', 'done'],
        ['group acme/platform/edge', 'refused'],
      ]);
      expect(pass.records[1]?.detail).toMatch(/POST groups\/12\/export → 403.*parked until 2026-11-27T03:00:30/);
      expect(manifest().sets).toHaveLength(1);
      expect(existsSync(join(folder('acme/platform/edge'), 'manifest.json'))).toBe(false);

      // An hour later the refusal is still parked: nothing is asked of the forge for edge, and acme is not due.
      const again = await scheduledPass(engineApp, '2026-11-27T02:30:00.000Z');
      expect(outcomes(again)).toEqual([
        ['group acme', 'skipped'],
        ['group acme/platform/edge', 'refused'],
      ]);
      expect(again.records[1]?.detail).toMatch(
        /^refused since 2026-11-27T02:00:30.*looked at again after 2026-11-27T03:00:30/,
      );
      expect(exportRequests(EDGE)).toHaveLength(1);
      expect(exportRequests(PLATFORM)).toHaveLength(0);
    });

    it('a group the forge fails to answer for (500) while it answers for the others is looked at again 5, 10, 20 minutes after the run', async () => {
      const engineApp = await app(['groups: [acme, acme/platform]']);
      harness.sandbox.state.faults.add({ method: 'GET', path: '^/api/v4/groups/acme(%2F|/)platform$', status: 500 });
      const pass = await scheduledPass(engineApp, night(27));
      expect(pass.unobserved).toEqual([{ target: 'group acme/platform', reason: expect.stringMatching(/500/) }]);
      expect(outcomes(pass)).toEqual([['group acme', 'done']]);
      expect(pass.nextPassAt?.toISOString()).toBe('2026-11-27T02:05:00.000Z');
      expect((await scheduledPass(engineApp, '2026-11-27T02:05:00.500Z')).nextPassAt?.toISOString()).toBe(
        '2026-11-27T02:10:00.000Z',
      );

      // The forge answers again: the follow-up backs up the group it missed, and asks for no further pass.
      harness.sandbox.state.faults.clear();
      const followUp = await scheduledPass(engineApp, '2026-11-27T02:10:00.500Z');
      expect(outcomes(followUp)).toEqual([
        ['group acme', 'skipped'],
        ['group acme/platform', 'done'],
      ]);
      expect(followUp.nextPassAt).toBeUndefined();
    });

    it('groups a glob found: one gone from sight since discovery drops out, a refused download is that group’s, the others are backed up', async () => {
      const engineApp = await app(['groups: ["acme/**"]']);
      expect(outcomes(await scheduledPass(engineApp, night(27)))).toEqual([
        ['group acme', 'done'],
        ['group acme/platform', 'done'],
        ['group acme/platform/edge', 'done'],
      ]);
      // Minutes later, while discovery's listing (10 min) still has it, edge is hidden from the token; platform's
      // download is refused. `once` backs up every group now.
      await narrow(EDGE, 0);
      harness.sandbox.state.faults.add({
        method: 'GET',
        path: `^/api/v4/groups/${PLATFORM}/export/download$`,
        status: 403,
      });
      clock().set(Date.parse('2026-11-27T02:05:00.000Z'));
      const pass = await harness.pass(engineApp, 'nightly');
      expect(pass.unobserved ?? []).toEqual([]);
      expect(outcomes(pass)).toEqual([
        ['group acme', 'done'],
        ['group acme/platform', 'refused'],
      ]);
      expect(pass.records[1]?.detail).toMatch(/GET groups\/11\/export\/download → 403/);
      expect(manifest().sets).toHaveLength(2);
      expect(manifest('acme/platform').sets).toHaveLength(1);
    });
  });
});

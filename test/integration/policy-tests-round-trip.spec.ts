import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { type Clock, systemClock } from '../../src/clock';
import { parseConfig } from '../../src/config/load';
import type { Decision } from '../../src/engine/decision';
import { GitlabClient } from '../../src/gitlab/client';
import { policyType, POLICY_TYPES } from '../../src/policies';
import { recordWorld } from '../../src/policy-tests/recorder';
import { runPolicyTest } from '../../src/policy-tests/runner';
import { loadWorld } from '../../src/sandbox/world';
import { useEngineHarness } from '../support/engine-harness';
import { ROUND_TRIP_SECRETS, roundTripPolicies, roundTripWorld } from '../support/round-trip-world';
import { ADMIN_TOKEN, BASE_NOW, MAINTAINER_TOKEN, OUTSIDER_TOKEN, USER_TOKEN } from '../support/world-builders';

/**
 * The promise of `forgewarden record` and `forgewarden test`: a world recorded from a forge, replayed, decides exactly
 * what `plan` decided against that forge. A world with drift in every policy type is served by the sandbox; the real
 * engine (Redis, discovery, executor) plans each policy at a fixed time; each policy's reads are recorded into a world
 * file; the test runner decides on that file at the same time. Nothing of the forge's secrets is in the files.
 */

/** The daemon's clock stopped at the world's `now`, so `plan` and the replay decide at the same instant. */
const frozen: Clock = { ...systemClock, now: () => Date.parse(BASE_NOW) };

/** A decision as it can be compared: the local folders each side used named alike. */
function comparable(decision: Decision, folders: Record<string, string>): unknown {
  let text = JSON.stringify({
    action: decision.action,
    target: decision.target,
    key: decision.key,
    reason: decision.reason,
    params: decision.params,
    details: decision.details,
  });
  for (const [key, folder] of Object.entries(folders)) text = text.split(folder).join(`<${key}>`);
  // The folders of the replay and of the recording: .../forgewarden-test-XXXXXX/<key>.
  text = text.replace(/(?:\/[^"\s/]+)*\/forgewarden-(?:test|record)-[A-Za-z0-9]+\/(secrets_dir|destination)/g, '<$1>');
  return JSON.parse(text);
}

describe('a recorded world replayed decides what plan decided against the forge', () => {
  const harness = useEngineHarness({ name: 'policy-round-trip', world: roundTripWorld, policyTypes: POLICY_TYPES });
  let folders: { secrets_dir: string; destination: string };
  let out: string;

  beforeEach(() => {
    out = mkdtempSync(join(tmpdir(), 'round-trip-'));
    folders = {
      secrets_dir: mkdtempSync(join(tmpdir(), 'round-trip-keys-')),
      destination: mkdtempSync(join(tmpdir(), 'round-trip-backups-')),
    };
  });

  afterEach(() => {
    for (const folder of [out, ...Object.values(folders)]) rmSync(folder, { recursive: true, force: true });
  });

  /** Plans, records and replays each policy; answers what each planned to act on, by name. */
  async function roundTrip(token: string, names: readonly string[]): Promise<Record<string, string[]>> {
    const acted: Record<string, string[]> = {};
    const policies = roundTripPolicies(folders);
    const app = await harness.app({ policies, clock: frozen, token, dryRun: true });
    const file = parseConfig(
      ['version: 1', 'gitlab: { url: "http://forge.invalid", token: unused }', 'policies:', ...policies].join('\n'),
      'round-trip.yml',
      { policyTypes: POLICY_TYPES, env: {} },
    );
    const client = new GitlabClient({ url: harness.sandbox.url, token, maxRequestsPerMinute: 0 });
    try {
      for (const name of names) {
        const planned = await harness.pass(app, name, 'plan');
        acted[name] = [
          ...new Set(
            planned.decisions.filter((decision) => decision.action !== 'skip').map((decision) => decision.action),
          ),
        ].sort();
        const policy = file.policies.find((candidate) => candidate.name === name)!;
        const runner = policyType(policy.type)!;
        const recording = await recordWorld({
          policy,
          runner,
          client,
          now: new Date(BASE_NOW),
          maxProjects: 100,
          anonymise: false,
        });
        const worldFile = join(out, `${name}.yml`);
        writeFileSync(worldFile, stringify(recording.world, { lineWidth: 0 }));
        const world = loadWorld(worldFile);
        const test = {
          name,
          at: `${worldFile}:1`,
          line: 1,
          policy: name,
          world,
          worldFile,
          now: BASE_NOW,
          occasion: 'command' as const,
          as: recording.as,
          expect: { decisions: [], noOtherActions: false, notRead: [] },
        };
        const replayed = await runPolicyTest(test, policy, runner);
        expect(replayed.error).toBeUndefined();
        expect(replayed.unobserved).toEqual(planned.unobserved ?? []);
        expect(replayed.decisions.map((decision) => comparable(decision, folders))).toEqual(
          planned.decisions.map((decision) => comparable(decision, folders)),
        );
        // What `record` printed as the test's expectations is what the forge's pass decided.
        expect(recording.decisions.map((decision) => comparable(decision, folders))).toEqual(
          planned.decisions.map((decision) => comparable(decision, folders)),
        );
      }
    } finally {
      await client.close();
    }
    return acted;
  }

  it('for all six policy types, with an administrator token', async () => {
    // A key the daemon rotated before, on disk: nothing of secrets_dir may reach a recording.
    const privateKey = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    writeFileSync(join(folders.secrets_dir, 'keys-root-61'), privateKey, { mode: 0o600 });
    const acted = await roundTrip(ADMIN_TOKEN, ['retry', 'cleanup', 'access', 'keys', 'settings', 'backup']);
    // Drift in every type, each section of project_settings included.
    expect(acted).toEqual({
      retry: ['retry'],
      cleanup: ['bulk_delete'],
      access: ['approve', 'deny'],
      keys: ['enable_key', 'upload_key', 'verify_key', 'write_key'],
      settings: ['edit_approval_rule', 'edit_approval_settings', 'reprotect_branch', 'set_integration'],
      backup: ['backup'],
    });
    const written = ['retry', 'cleanup', 'access', 'keys', 'settings', 'backup']
      .map((name) => readFileSync(join(out, `${name}.yml`), 'utf8'))
      .join('\n');
    for (const secret of [ADMIN_TOKEN, USER_TOKEN, MAINTAINER_TOKEN, OUTSIDER_TOKEN, ...ROUND_TRIP_SECRETS])
      expect(written).not.toContain(secret);
    expect(written).not.toMatch(/PRIVATE KEY/);
    expect(written).not.toContain(privateKey.split('\n')[1]);
    expect(written).not.toMatch(/glpat-[A-Za-z0-9]/);
    // The integration is there, its secret replaced.
    expect(written).toContain('webhook: replaced-by-forgewarden-record');
  });

  it('with a maintainer token, whose roles the world gives the same user', async () => {
    const acted = await roundTrip(MAINTAINER_TOKEN, ['retry', 'cleanup', 'settings']);
    expect(acted.cleanup).toEqual(['bulk_delete']);
    const world = loadWorld(join(out, 'retry.yml'));
    expect(world.users[0]).toMatchObject({ username: 'mia', admin: false });
    expect(world.groups.find((group) => group.path === 'acme')?.members).toEqual([
      expect.objectContaining({ user: 'mia', access_level: 40 }),
    ]);
  });
});

import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HookRunner } from '../../src/effects/hook-runner';
import { SecretFiles } from '../../src/effects/secret-files';
import { SKIP, type Decision, type PolicyType } from '../../src/engine/policy';
import { RotationSteps } from '../../src/policies/key-rotation/key-rotation.actions';
import { CredentialKinds } from '../../src/policies/key-rotation/credential-kind';
import type { RotationSnapshot } from '../../src/policies/key-rotation/key-rotation.decide';
import { KeyFiles } from '../../src/policies/key-rotation/key-rotation.key-files';
import { loadRecord } from '../../src/policies/key-rotation/key-rotation.record';
import { defineKeyRotationType } from '../../src/policies/key-rotation/key-rotation.type';
import type { RotationConfig } from '../../src/policies/key-rotation/key-rotation.schema';
import { CREDENTIAL_KINDS } from '../../src/policies/key-rotation/kinds';
import { readOpenSshPrivateKey } from '../../src/policies/key-rotation/openssh';
import { aPublicKey } from '../support/builders/keys';
import { SigningService, signingKeysKind } from '../support/fake-credential-kind';
import { usePolicySandbox } from '../support/policy-sandbox';
import { ADMIN_TOKEN, baseWorld } from '../support/world-builders';

const DAY_MS = 86_400_000;
const OLD = 1;
const YOUNG = 2;

/**
 * A credential kind the build does not have, added as one file (test/support/fake-credential-kind.ts) and one line
 * (its section beside this build's kinds): key_rotation's core decides its keys, runs every step of their rotation
 * with its preconditions, keeps the records and the key files, and runs on_rotate, with nothing else added.
 */
describe('a credential kind added in one file and one line', () => {
  const forge = usePolicySandbox({ token: ADMIN_TOKEN, world: () => baseWorld() });
  let secrets: string;
  let service: SigningService;
  let now: Date;

  beforeEach(() => {
    secrets = mkdtempSync(join(tmpdir(), 'credential-kind-'));
    now = forge.sandbox.state.clock.date();
    service = new SigningService();
    service.now = now;
    service.accounts.set('release-bot', [
      {
        id: OLD,
        title: 'sign-release',
        key: aPublicKey('old'),
        created_at: new Date(now.getTime() - 40 * DAY_MS).toISOString(),
      },
      {
        id: YOUNG,
        title: 'sign-nightly',
        key: aPublicKey('young'),
        created_at: new Date(now.getTime() - 2 * DAY_MS).toISOString(),
      },
    ]);
  });

  afterEach(() => rmSync(secrets, { recursive: true, force: true }));

  function policy() {
    const kinds = new CredentialKinds({ ...CREDENTIAL_KINDS.sections, signing_keys: signingKeysKind(service) });
    const runner: PolicyType<RotationConfig, RotationSnapshot> = defineKeyRotationType(
      new RotationSteps(kinds, new KeyFiles(new SecretFiles()), new HookRunner(60_000)),
    );
    const config = runner.definition.schema.parse({
      name: 'rotate',
      type: 'key_rotation',
      interval: '1h',
      secrets_dir: secrets,
      signing_keys: [{ account: 'release-bot', titles: ['^sign-'], rotate_after: '30d', grace: '1d' }],
      on_rotate: `echo "$FORGEWARDEN_KEY_ID $FORGEWARDEN_KEY_TITLE $FORGEWARDEN_OLD_KEY_ID" >> ${join(secrets, 'hook.log')}`,
    }) as RotationConfig;
    return { runner, config };
  }

  /** One pass as the executor runs it: each decision's precondition read again, then its effect. */
  async function pass(
    { runner, config }: ReturnType<typeof policy>,
    at: Date,
    beforeActing: () => void = () => undefined,
  ) {
    const context = forge.context({ now: at, policy: config });
    const snapshot = await runner.observe(config, context);
    const decisions = runner.decide(config, snapshot, at);
    beforeActing();
    const outcomes: string[] = [];
    for (const decision of decisions) {
      if (decision.action === SKIP) {
        outcomes.push(`${decision.target}: ${decision.reason}`);
        continue;
      }
      const action = runner.actions[decision.action];
      const stale = await action.precondition?.(decision.params, context);
      if (stale) {
        outcomes.push(`${decision.action} stale: ${stale}`);
        continue;
      }
      try {
        outcomes.push(`${decision.action}: ${(await action.run(decision.params, context))?.detail ?? ''}`);
      } catch (error) {
        outcomes.push(`${decision.action} failed: ${(error as Error).message}`);
      }
    }
    return {
      snapshot,
      decisions,
      outcomes,
      summary: runner.summarize(config, snapshot, decisions),
      nextPass: runner.nextPass?.(config, snapshot, at, decisions),
    };
  }

  const keyIds = () => (service.accounts.get('release-bot') ?? []).map((key) => key.id);
  const later = (ms: number) => new Date(now.getTime() + ms);

  it('is decided, rotated, handed to on_rotate and its old key removed after the grace, by the core alone', async () => {
    const rotate = policy();
    const first = await pass(rotate, now);
    expect(first.summary).toBe('0 SSH keys of 0 users, 0 deploy keys, 2 signing keys');
    expect(first.decisions.map((d: Decision) => `${d.action} ${d.key}`)).toEqual([
      'write_key signing-release-bot-1:write_key:0',
      'upload_key signing-release-bot-1:upload_key:0',
      'verify_key signing-release-bot-1:verify_key:0',
      'run_on_rotate signing-release-bot-1:run_on_rotate:0',
      'skip signing-release-bot-2',
    ]);
    expect(first.decisions[0].reason).toBe(
      `rotate: created ${later(-40 * DAY_MS)
        .toISOString()
        .slice(0, 10)}, older than rotate_after 30d`,
    );
    expect(first.decisions[0].params).toMatchObject({
      kind: 'signing',
      holder: 'release-bot',
      old_key_id: OLD,
      path: join(secrets, 'rotate', `release-bot-${OLD}`),
    });
    expect(first.outcomes.at(-1)).toBe('signing key 2 of release-bot: skip: 2d old, rotates after 30d');

    // The new key on the service is the one whose private half is on disk, 0600; on_rotate ran with it.
    const path = join(secrets, 'rotate', `release-bot-${OLD}`);
    const added = (service.accounts.get('release-bot') ?? []).find((key) => key.id !== OLD && key.id !== YOUNG);
    expect(added?.key.split(' ').slice(0, 2).join(' ')).toBe(
      readOpenSshPrivateKey(readFileSync(path, 'utf8')).publicKey,
    );
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readFileSync(join(secrets, 'hook.log'), 'utf8')).toBe(`${added?.id} sign-release ${OLD}\n`);
    expect(await loadRecord(forge.state, `signing-release-bot-${OLD}`)).toMatchObject({
      kind: 'signing',
      holder: 'release-bot',
      step: 'hooked',
      new_key_id: added?.id,
    });
    expect(first.nextPass).toEqual(later(DAY_MS + 60_000));

    // Within the grace both keys stay; the new one is known as the rotation's.
    const during = await pass(rotate, later(12 * 3_600_000));
    expect(during.outcomes).toEqual([
      `signing key 1 of release-bot: skip: keep old key 1 until ${later(DAY_MS).toISOString()} (grace 1d)`,
      'signing key 2 of release-bot: skip: 2d old, rotates after 30d',
      `signing key ${added?.id} of release-bot: skip: new key of rotation signing-release-bot-1`,
    ]);
    expect(keyIds()).toEqual([OLD, YOUNG, added?.id]);

    const after = await pass(rotate, later(DAY_MS + 3_600_000));
    expect(after.outcomes.filter((line) => !line.includes('skip'))).toEqual(['remove_old_key: old key 1 removed']);
    expect(keyIds()).toEqual([YOUNG, added?.id]);
    expect(await loadRecord(forge.state, `signing-release-bot-${OLD}`)).toMatchObject({ step: 'done' });
    expect(service.calls.filter((call) => !call.startsWith('GET'))).toEqual([
      `POST release-bot sign-release`,
      'DELETE release-bot 1',
    ]);
    // The build's kinds, with no entries, read nothing: the forge saw the token's user, once a pass.
    expect(forge.sandbox.state.requestLog.map((entry) => `${entry.method} ${entry.path}`)).toEqual(
      Array.from({ length: 3 }, () => 'GET /api/v4/user'),
    );
  });

  it('keeps to the precondition: an old key a person removed meanwhile gets no new key, and its rotation is closed', async () => {
    const rotate = policy();
    const first = await pass(rotate, now, () =>
      service.accounts.set(
        'release-bot',
        (service.accounts.get('release-bot') ?? []).filter((key) => key.id !== OLD),
      ),
    );
    expect(first.outcomes.slice(1, 4)).toEqual([
      'upload_key stale: old key 1 is gone from release-bot: no new key is uploaded',
      'verify_key failed: not run: rotation signing-release-bot-1 is at key_written; retried next pass',
      'run_on_rotate failed: not run: rotation signing-release-bot-1 is at key_written; retried next pass',
    ]);
    expect(service.calls.filter((call) => call.startsWith('POST'))).toEqual([]);

    const next = await pass(rotate, later(3_600_000));
    expect(next.outcomes.filter((line) => line.startsWith('close_rotation'))).toEqual([
      `close_rotation: rotation signing-release-bot-1 closed: old key 1 is gone; its key file moved to ${join(secrets, 'rotate', 'release-bot-1')}.closed-${later(
        3_600_000,
      )
        .toISOString()
        .replace(/[-:]/g, '')
        .replace(/\.\d+Z$/, 'Z')}`,
    ]);
    expect(await loadRecord(forge.state, 'signing-release-bot-1')).toMatchObject({
      step: 'closed',
      closed_reason: 'old key 1 is gone',
    });
    expect(keyIds()).toEqual([YOUNG]);
  });

  it('joins the policy type: its section is validated, and a policy with none of the sections is told all of them', () => {
    const { runner } = policy();
    expect(() =>
      runner.definition.schema.parse({ name: 'rotate', type: 'key_rotation', interval: '1h', secrets_dir: secrets }),
    ).toThrow(
      'this policy would never act: give ssh_keys, deploy_keys, signing_keys, project_access_tokens, group_access_tokens, deploy_tokens, personal_access_tokens or several',
    );
    expect(() =>
      runner.definition.schema.parse({
        name: 'rotate',
        type: 'key_rotation',
        interval: '1h',
        secrets_dir: secrets,
        signing_keys: [{ account: 'x', titles: [], rotate_after: '1d', grace: '1d' }],
      }),
    ).toThrow('give at least one expression');
  });
});

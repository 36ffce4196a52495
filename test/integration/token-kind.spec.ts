import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HookRunner } from '../../src/effects/hook-runner';
import { SecretFiles } from '../../src/effects/secret-files';
import { SKIP, type PolicyType } from '../../src/engine/policy';
import { RotationSteps } from '../../src/policies/key-rotation/key-rotation.actions';
import type { RotationSnapshot } from '../../src/policies/key-rotation/key-rotation.decide';
import { KeyFiles } from '../../src/policies/key-rotation/key-rotation.key-files';
import { defineKeyRotationType } from '../../src/policies/key-rotation/key-rotation.type';
import type { RotationConfig } from '../../src/policies/key-rotation/key-rotation.schema';
import { CREDENTIAL_KINDS, TOKEN_KINDS } from '../../src/policies/key-rotation/kinds';
import { TokenKinds } from '../../src/policies/key-rotation/token-kind';
import { TokenSteps } from '../../src/policies/key-rotation/token-rotation.actions';
import { TokenDelivery } from '../../src/policies/key-rotation/token-rotation.delivery';
import { Vault, vaultTokensKind } from '../support/fake-token-kind';
import { usePolicySandbox } from '../support/policy-sandbox';
import { ADMIN_TOKEN, baseWorld } from '../support/world-builders';

/**
 * A token kind the build does not have, added as one file (test/support/fake-token-kind.ts) and one line (its section
 * beside this build's token kinds): the token core decides its tokens, rotates them with the new expiry, keeps the
 * value in secrets_dir, delivers it to a file and on_rotate, reads it back and records the rotation done.
 */
describe('a token kind added in one file and one line', () => {
  const forge = usePolicySandbox({ token: ADMIN_TOKEN, world: () => baseWorld() });
  let secrets: string;

  beforeEach(() => {
    secrets = mkdtempSync(join(tmpdir(), 'token-kind-'));
  });

  afterEach(() => rmSync(secrets, { recursive: true, force: true }));

  it('is decided, rotated, kept, delivered and read back by the core alone', async () => {
    const vault = new Vault();
    const now = forge.sandbox.state.clock.date();
    vault.accounts.set('deployer', [
      {
        id: 1,
        name: 'ci',
        value: 'vault-1-secret',
        revoked: false,
        expires_at: new Date(now.getTime() + 3 * 86_400_000).toISOString().slice(0, 10),
      },
      { id: 2, name: 'ci-later', value: 'vault-2-secret', revoked: false, expires_at: '2099-01-01' },
    ]);
    const tokens = new TokenKinds({ ...TOKEN_KINDS.sections, vault_tokens: vaultTokensKind(vault) });
    const tokenSteps = new TokenSteps(tokens, new TokenDelivery(new SecretFiles(), new HookRunner(60_000)));
    const runner: PolicyType<RotationConfig, RotationSnapshot> = defineKeyRotationType(
      new RotationSteps(CREDENTIAL_KINDS, new KeyFiles(new SecretFiles()), new HookRunner(60_000)),
      undefined,
      tokenSteps,
    );
    const config = runner.definition.schema.parse({
      name: 'rotate',
      type: 'key_rotation',
      interval: '1h',
      secrets_dir: secrets,
      on_rotate: `cat > ${join(secrets, 'hook.out')}`,
      vault_tokens: [
        {
          account: 'deployer',
          names: ['^ci'],
          before_expiry: '7d',
          lifetime: '30d',
          deliver: [{ file: join(secrets, '{holder}-{name}') }, { on_rotate: true }],
        },
      ],
    }) as RotationConfig;

    const context = forge.context({ now, policy: config });
    const decisions = runner.decide(config, await runner.observe(config, context), now);
    expect(decisions.map((d) => `${d.action} ${d.target}: ${d.reason}`)).toEqual([
      `issue_token vault token 1 "ci" of account deployer: rotate: expires ${vault.tokens('deployer')[0].expires_at}, within before_expiry 7d: rotate it (the forge revokes token 1 at once), new expiry ${new Date(now.getTime() + 30 * 86_400_000).toISOString().slice(0, 10)}`,
      'deliver_token vault token 1 "ci" of account deployer: deliver the new token',
      'skip vault token 2 "ci-later" of account deployer: skip: expires 2099-01-01, rotates 7d before',
    ]);
    for (const decision of decisions.filter((d) => d.action !== SKIP)) {
      const action = runner.actions[decision.action];
      expect(await action.precondition?.(decision.params, context)).toBeUndefined();
      await action.run(decision.params, context);
    }
    const fresh = vault.tokens('deployer').find((token) => token.id > 2);
    expect(vault.calls).toEqual([`rotate deployer 1 ${fresh?.expires_at ?? ''}`]);
    expect(readFileSync(join(secrets, 'deployer-ci'), 'utf8')).toBe(fresh?.value);
    expect(readFileSync(join(secrets, 'hook.out'), 'utf8')).toBe(fresh?.value);
    expect(JSON.stringify(decisions)).not.toContain(fresh?.value ?? '?');
    expect(JSON.parse((await forge.state.get('token-rotation:vault_token-deployer-1')) ?? '{}')).toMatchObject({
      step: 'done',
      new_token_id: fresh?.id,
    });
  });
});

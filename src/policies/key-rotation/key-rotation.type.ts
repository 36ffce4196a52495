import { defineAction } from '../../engine/action-params';
import type { PolicyTypeDefinition } from '../../config/policy-type';
import type { PolicyType } from '../../engine/policy';
import { keyRotationSteps, type RotationSteps } from './key-rotation.actions';
import { decideRotations, nextRotationPass, rulesOf, type RotationSnapshot } from './key-rotation.decide';
import {
  CLOSE_ROTATION,
  ENABLE_KEY,
  REMOVE_OLD_KEY,
  RUN_ON_ROTATE,
  UPLOAD_KEY,
  VERIFY_KEY,
  WRITE_KEY,
} from './key-rotation.decisions';
import { KEY_ROTATION_HARMS, REMOVE_NEW_KEY } from './key-rotation.harms';
import { type KeyRotationObservation, observeRotations } from './key-rotation.observer';
import {
  type KeyRotationConfig,
  keyRotationDefinition,
  keyRotationPolicy,
  type RotationConfig,
} from './key-rotation.schema';
import { keyRotationTokenSteps, tokenParts } from './token-rotation.parts';
import type { TokenSteps } from './token-rotation.actions';

/**
 * The key_rotation policy as the engine runs it, over the kinds its steps know: every `interval`, plus a pass when an
 * old key's grace period ends. Each step of a rotation is its own action; the executor runs each attempt of a step
 * once (see key-rotation.record.ts). Every step that gives or takes access re-reads the forge just before it acts (its
 * precondition): the new key goes only where the old key still is, and the old key goes only while the new key is
 * where it must be.
 */
export function defineKeyRotationType<Config extends RotationConfig, Snapshot extends RotationSnapshot>(
  steps: RotationSteps,
  definition?: PolicyTypeDefinition,
  tokenSteps: TokenSteps = keyRotationTokenSteps,
): PolicyType<Config, Snapshot> {
  const { kinds, keyFiles, preconditions } = steps;
  const sections = kinds.entries();
  const tokens = tokenParts(tokenSteps);
  return {
    definition: definition ?? keyRotationDefinition(kinds, tokenSteps.kinds),
    trigger: (config) => ({ every: config.interval }),
    // The snapshot is what the kinds' facts add up to, which Snapshot names; the tokens' part sits under `tokens`.
    observe: async (config, context) => {
      const keys = await observeRotations(kinds, keyFiles, config, context);
      return { ...keys, tokens: await tokens.observe(config, context) } as unknown as Snapshot;
    },
    decide: (config, snapshot, now) => [
      ...decideRotations(kinds, config, snapshot, now),
      ...tokens.decide(config, snapshot, now),
    ],
    nextPass: (_config, snapshot, now, decisions) =>
      earliest(nextRotationPass(snapshot, now, decisions), tokens.nextPass(snapshot, now, decisions)),
    actions: {
      ...tokens.actions,
      [WRITE_KEY]: defineAction({
        read: (params) => params,
        unchecked: 'it writes a new private key into secrets_dir; nothing on the forge changes',
        run: (params, context) => steps.writeKey(params, context),
      }),
      // The user (the project) still holds the old key: a person who removed it may have meant to take the access away.
      [UPLOAD_KEY]: defineAction({
        read: (params) => params,
        precondition: (params, context) => preconditions.upload(params, context),
        run: (params, context) => steps.uploadKey(params, context),
      }),
      [ENABLE_KEY]: defineAction({
        read: (params) => params,
        precondition: (params, context) => preconditions.enable(params, context),
        run: (params, context) => steps.enableKey(params, context),
      }),
      [VERIFY_KEY]: defineAction({
        read: (params) => params,
        unchecked: 'it reads the forge and records what it lists; nothing on the forge changes',
        run: (params, context) => steps.verifyKey(params, context),
      }),
      // Every holder has the new key as recorded: consumers are not handed a key a holder lacks, or a person deleted.
      [RUN_ON_ROTATE]: defineAction({
        read: (params) => params,
        precondition: (params, context) => preconditions.hook(params, context),
        run: (params, context) => steps.runOnRotate(params, context),
      }),
      // The new key is listed (id, fingerprint, can_push) wherever the old key is removed from, and the old id is still the old key.
      [REMOVE_OLD_KEY]: defineAction({
        read: (params) => params,
        precondition: (params, context) => preconditions.remove(params, context),
        run: (params, context) => steps.removeOldKey(params, context),
      }),
      // The new key is still there, and (for a person's revocation) the old key still is not: a repair of the bot's own harm.
      [REMOVE_NEW_KEY]: defineAction({
        read: (params) => params,
        precondition: (params, context) => preconditions.removeNew(params, context),
        run: (params, context) => steps.removeNewKey(params, context),
      }),
      [CLOSE_ROTATION]: defineAction({
        read: (params) => params,
        unchecked:
          "it changes only the policy's own state: the rotation's record in Redis, and its key file in secrets_dir, moved aside; nothing on the forge changes",
        run: (params, context) => steps.closeRotation(params, context),
      }),
    },
    summarize: (config, snapshot) =>
      [...sections.map(([, kind]) => kind.summary(snapshot)), ...tokens.summary(config, snapshot)].join(', '),
    // Only where globs chose some of the projects: a list written out needs no echo.
    covered: (config, snapshot) => {
      const chosen = sections.flatMap(([section, kind]) => {
        const projects = kind.covered?.(rulesOf(config, section), snapshot);
        return projects ? [projects] : [];
      });
      return chosen.length > 0 ? { projects: chosen.flat() } : {};
    },
    needsAdministrator: (config) => {
      const reasons = [
        ...sections.flatMap(([section, kind]) => kind.needsAdministrator?.(rulesOf(config, section)) ?? []),
        ...tokens.needsAdministrator(config),
      ];
      return reasons.length === 0 ? undefined : reasons.join('; ');
    },
    probes: (config) => [
      {
        target: `secrets_dir ${config.secrets_dir}`,
        needs: "a folder the daemon's user may write",
        read: async () => {
          const problem = await keyFiles.unusable(config.secrets_dir);
          // The target names the folder already: `secrets_dir /x: does not exist`.
          const named = `secrets_dir ${config.secrets_dir} `;
          if (problem) throw new Error(problem.startsWith(named) ? problem.slice(named.length) : problem);
        },
      },
      ...sections.flatMap(([section, kind]) => kind.probes(rulesOf(config, section))),
      ...tokens.probes(config),
    ],
    limits: (config) => ({ actionsPerPass: config.max_actions_per_run }),
    harms: KEY_ROTATION_HARMS,
    withFolders: (config, folder) => ({ ...config, secrets_dir: folder('secrets_dir') }),
  };
}

export const keyRotationType = defineKeyRotationType<KeyRotationConfig, KeyRotationObservation>(
  keyRotationSteps,
  keyRotationPolicy,
);

function earliest(a: Date | undefined, b: Date | undefined): Date | undefined {
  if (!a || !b) return a ?? b;
  return a.getTime() <= b.getTime() ? a : b;
}

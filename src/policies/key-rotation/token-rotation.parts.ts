import { HookRunner } from '../../effects/hook-runner';
import { SecretFiles } from '../../effects/secret-files';
import { defineAction } from '../../engine/action-params';
import type { Decision, PolicyAction, ObserveContext, TargetProbe } from '../../engine/policy';
import { TOKEN_KINDS } from './kinds';
import { TokenSteps } from './token-rotation.actions';
import {
  CLOSE_TOKEN_ROTATION,
  decideTokens,
  DELIVER_TOKEN,
  ISSUE_TOKEN,
  REVOKE_OLD_TOKEN,
  type TokenSettings,
  type TokenSnapshot,
} from './token-rotation.decide';
import { TokenDelivery } from './token-rotation.delivery';
import { observeTokens } from './token-rotation.observer';
import { readTokenParams } from './token-rotation.params';
import type { TokenRule } from './token-rotation.schema';

/** How long on_rotate may run with a token's value before it counts as failed. */
const ON_ROTATE_TIMEOUT_MS = 5 * 60_000;

/** What a key_rotation snapshot holds of tokens, beside the key kinds' facts. */
interface WithTokens {
  readonly tokens?: TokenSnapshot;
}

/**
 * The tokens' part of the key_rotation runner: observe, decide, the next pass (an overlap's grace ending) and the
 * actions, each with its precondition (docs/policies.md, key_rotation, "Tokens").
 */
export function tokenParts(steps: TokenSteps) {
  const settings = (config: object) => config as unknown as TokenSettings;
  const actions: Record<string, PolicyAction> = {
    // The old token is still active (a person who revoked it took the access away), or a lost answer is looked for.
    [ISSUE_TOKEN]: defineAction({
      read: readTokenParams.issue,
      precondition: (params, context) => steps.issuePrecondition(params, context),
      run: (params, context) => steps.issue(params, context),
    }),
    // What it writes is checked by the step itself: the new token active after the delivery, each delivery read back.
    [DELIVER_TOKEN]: defineAction({
      read: readTokenParams.step,
      unchecked:
        'it writes the new value where the policy delivers it and reads each back; the new token is checked active afterwards, and a revoked one closes the rotation',
      run: (params, context) => steps.deliver(params, context),
    }),
    // The new token still works, and each delivery still holds it (read back by the step), before the old one goes.
    [REVOKE_OLD_TOKEN]: defineAction({
      read: readTokenParams.step,
      precondition: (params, context) => steps.revokePrecondition(params, context),
      run: (params, context) => steps.revokeOld(params, context),
    }),
    [CLOSE_TOKEN_ROTATION]: defineAction({
      read: readTokenParams.close,
      unchecked: "it changes only the policy's own record; nothing on the forge changes",
      run: (params, context) => steps.close(params, context),
    }),
  };
  return {
    actions,
    observe: (config: object, context: ObserveContext) => observeTokens(steps.kinds, settings(config), context),
    decide: (config: object, snapshot: object, now: Date): Decision[] => {
      const { tokens } = snapshot as WithTokens;
      return tokens ? decideTokens(steps.kinds, settings(config), tokens, now) : [];
    },
    /** When an overlap's grace ends, a minute late so replicas a little apart all find it over. */
    nextPass: (snapshot: object, now: Date, decisions: readonly Decision[]): Date | undefined => {
      const records = (snapshot as WithTokens).tokens?.records ?? {};
      const waiting = Object.values(records)
        .filter((record) => record.step === 'delivered' && record.delivered_at)
        .map((record) => Date.parse(record.delivered_at ?? '') + record.grace_ms);
      // An overlap delivered this pass waits its grace from now.
      const delivering = decisions.flatMap((decision) =>
        decision.action === DELIVER_TOKEN && typeof decision.params.grace_ms === 'number'
          ? [now.getTime() + decision.params.grace_ms]
          : [],
      );
      const ends = [...waiting, ...delivering].filter((at) => at > now.getTime());
      return ends.length > 0 ? new Date(Math.min(...ends) + 60_000) : undefined;
    },
    summary: (config: object, snapshot: object): string[] =>
      steps.kinds.entries().flatMap(([section, kind]) => {
        if (((settings(config)[section] as unknown[] | undefined) ?? []).length === 0) return [];
        const listings = (snapshot as WithTokens).tokens?.listings[section] ?? [];
        const tokens = listings.reduce(
          (sum, listing) =>
            sum +
            listing.holders.reduce(
              (n, entry) => n + ('tokens' in entry ? entry.tokens.filter((token) => token.active).length : 0),
              0,
            ),
          0,
        );
        const holders = new Set(listings.flatMap((listing) => listing.holders.map((entry) => entry.holder.label))).size;
        return [`${tokens} ${kind.noun}s of ${holders} holder${holders === 1 ? '' : 's'}`];
      }),
    needsAdministrator: (config: object): string[] =>
      steps.kinds
        .entries()
        .flatMap(
          ([section, kind]) =>
            kind.needsAdministrator?.((settings(config)[section] as TokenRule[] | undefined) ?? []) ?? [],
        ),
    probes: (config: object): TargetProbe[] =>
      steps.kinds
        .entries()
        .flatMap(([section, kind]) => kind.probes((settings(config)[section] as TokenRule[] | undefined) ?? [])),
  };
}

/** The token steps as the daemon runs them: this build's token kinds, on its disk, with on_rotate as its child. */
export const keyRotationTokenSteps = new TokenSteps(
  TOKEN_KINDS,
  new TokenDelivery(new SecretFiles(), new HookRunner(ON_ROTATE_TIMEOUT_MS)),
);

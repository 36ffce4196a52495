import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash } from 'node:crypto';

/**
 * What a request to the forge is for: which policy sent it, in which phase (observing, re-reading an action's
 * precondition, acting), and for which action. The engine sets it around each phase; the transport sends it as
 * `X-Forgewarden-Policy`, `-Phase` and `-Action` headers, so a forge's request log (and the chaos suite's judge)
 * can tell the precondition read of an action from the observation an hour before it. Nothing secret goes in.
 */
export interface RequestPurpose {
  readonly policy: string;
  readonly phase: 'observe' | 'precondition' | 'action';
  /** The action's id (a hash of its decision key), for the precondition and the action. */
  readonly action?: string;
}

const purposes = new AsyncLocalStorage<RequestPurpose>();

/** Runs `work` with every forge request it makes (however deep) tagged with `purpose`. */
export function withPurpose<T>(purpose: RequestPurpose, work: () => Promise<T>): Promise<T> {
  return purposes.run(purpose, work);
}

export function currentPurpose(): RequestPurpose | undefined {
  return purposes.getStore();
}

/** A short id for an action's decision key: the key may name users or paths, and a header needs no more than an id. */
export function actionId(policy: string, key: string): string {
  return createHash('sha256').update(`${policy}\n${key}`).digest('hex').slice(0, 12);
}

/** The headers for the current purpose, none outside of one. */
export function purposeHeaders(): Record<string, string> {
  const purpose = purposes.getStore();
  if (!purpose) return {};
  return {
    'x-forgewarden-policy': purpose.policy,
    'x-forgewarden-phase': purpose.phase,
    ...(purpose.action !== undefined ? { 'x-forgewarden-action': purpose.action } : {}),
  };
}

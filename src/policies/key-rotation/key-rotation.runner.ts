import type { PolicyRunner } from '../../engine/policy';
import { removeOldKey, runOnRotate, uploadKey, verifyKey, writeKey } from './key-rotation.actions';
import {
  decideKeyRotation,
  type KeyRotationSnapshot,
  nextKeyRotationPass,
  REMOVE_OLD_KEY,
  RUN_ON_ROTATE,
  UPLOAD_KEY,
  VERIFY_KEY,
  WRITE_KEY,
} from './key-rotation.decide';
import { observeKeyRotation } from './key-rotation.observer';
import { type KeyRotationConfig, keyRotationPolicy } from './key-rotation.schema';

/**
 * The key_rotation policy as the engine runs it: every `interval`, plus a pass when an old key's grace period ends.
 * Each step of a rotation is its own action; the executor runs each attempt of a step once (see key-rotation.record.ts).
 */
export const keyRotationRunner: PolicyRunner<KeyRotationConfig, KeyRotationSnapshot> = {
  type: keyRotationPolicy.type,
  schema: keyRotationPolicy.schema,
  trigger: (config) => ({ every: config.interval }),
  observe: observeKeyRotation,
  decide: decideKeyRotation,
  nextPass: nextKeyRotationPass,
  actions: {
    [WRITE_KEY]: writeKey,
    [UPLOAD_KEY]: uploadKey,
    [VERIFY_KEY]: verifyKey,
    [RUN_ON_ROTATE]: runOnRotate,
    [REMOVE_OLD_KEY]: removeOldKey,
  },
  maxActionsPerRun: (config) => config.max_actions_per_run,
};

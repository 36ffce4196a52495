import { z } from 'zod';
import { readParams } from '../../engine/action-params';
import type { ActionParams } from '../../engine/policy';
import { POLICY } from './key-rotation.params';
import type { TokenRecord } from './token-rotation.record';
import { STRATEGIES } from './token-rotation.schema';

/** The params of each token rotation step, as they travel through the queue and Redis, and the record they start. */

const resolvedDelivery = z.union([
  z.object({
    type: z.literal('variable'),
    scope: z.enum(['projects', 'groups']),
    place: z.union([z.string(), z.number()]),
    key: z.string(),
    environment_scope: z.string(),
    protected: z.boolean(),
    masked: z.boolean(),
    hidden: z.boolean(),
  }),
  z.object({ type: z.literal('file'), path: z.string() }),
  z.object({ type: z.literal('hook'), command: z.string(), env: z.array(z.string()) }),
]);

const stepSchema = z.object({ rotation: z.string(), generation: z.int().min(1) });
const issueSchema = stepSchema.extend({
  kind: z.string(),
  holder: z.object({
    ref: z.union([z.string(), z.number()]),
    label: z.string(),
    scope: z.enum(['projects', 'groups']).optional(),
  }),
  old_token_id: z.int(),
  name: z.string(),
  family: z.string(),
  scopes: z.array(z.string()),
  access_level: z.int().optional(),
  strategy: z.enum(STRATEGIES),
  grace_ms: z.number(),
  expires_at: z.string(),
  value_path: z.string(),
  deliveries: z.array(resolvedDelivery),
});
const closeSchema = stepSchema.extend({ reason: z.string() });

export type IssueStart = z.output<typeof issueSchema>;
export type StepParams = z.output<typeof stepSchema>;
export type CloseParams = z.output<typeof closeSchema>;
/** The issue step's params: the whole start, or only the rotation when a lost answer is looked for. */
export type IssueParams = IssueStart | StepParams;

/** Each action's params read back through its schema. */
export const readTokenParams = {
  issue: (params: ActionParams): IssueParams =>
    'kind' in params ? readParams(POLICY, issueSchema, params) : readParams(POLICY, stepSchema, params),
  step: (params: ActionParams) => readParams(POLICY, stepSchema, params),
  close: (params: ActionParams) => readParams(POLICY, closeSchema, params),
};

/** The record a token rotation starts with, `sending`, from its issue step's params. */
export function recordOfIssue(params: IssueStart, now: Date): TokenRecord {
  return {
    id: params.rotation,
    kind: params.kind,
    step: 'sending',
    attempt: 0,
    generation: params.generation,
    holder: params.holder,
    name: params.name,
    old_token_id: params.old_token_id,
    family: params.family,
    strategy: params.strategy,
    grace_ms: params.grace_ms,
    expires_at: params.expires_at,
    value_path: params.value_path,
    deliveries: params.deliveries,
    known_ids: [],
    sent_at: null,
    new_token_id: null,
    value_sha256: null,
    delivered: [],
    delivered_at: null,
    started_at: now.toISOString(),
    finished_at: null,
    last_error: null,
    closed_reason: null,
  };
}

import { z } from 'zod';
import { inScope, requestScopeShape } from './request-scope';

/**
 * Injected faults for the API (never the control API): rate limiting with and without `Retry-After`, server errors,
 * connection resets and latency. A rule is scoped to a method and a path regex (or global) and fires always, with a
 * probability, for the next `times` matching requests, or following a `sequence` such as `[503, 503, "pass"]`.
 * Latency rules add up; among the others the first rule that fires answers.
 *
 * By default a fault answers instead of the forge, so nothing happened. With `after: true` the request is handled
 * first and the fault replaces the forge's answer: a proxy that lost the upstream's reply (502/504) or a connection
 * cut after the work was done. The client cannot tell that the forge acted, which is what makes a write unsafe to
 * repeat.
 */

const answerSchema = z.strictObject({
  status: z.number().int().min(400).max(599).optional(),
  /** Seconds for `Retry-After`; omitted = no header (some real 429s have none). */
  retry_after: z.number().int().nonnegative().optional(),
  /** `RateLimit-Reset` as seconds from the sandbox clock's now. */
  ratelimit_reset_in: z.number().int().nonnegative().optional(),
  /** `RateLimit-Reset` as absolute epoch seconds. */
  ratelimit_reset: z.number().int().nonnegative().optional(),
  body: z.unknown().optional(),
  reset: z.boolean().optional(),
  latency_ms: z.number().int().nonnegative().optional(),
  /** The forge handles the request first; the status or reset then replaces its answer. */
  after: z.boolean().optional(),
});

/** `after` only means something for a fault that answers (a status or a reset), not for latency alone. */
const afterNeedsAnswer = (answer: z.output<typeof answerSchema>): boolean =>
  answer.after !== true || answer.reset === true || answer.status !== undefined;
const AFTER_NEEDS_ANSWER = { message: 'after: true needs a status or reset: true' };

const stepSchema = z.union([
  z.number().int().min(400).max(599),
  z.literal(['pass', 'reset']),
  answerSchema.refine(afterNeedsAnswer, AFTER_NEEDS_ANSWER),
]);

export const faultRuleSchema = answerSchema
  .extend({
    ...requestScopeShape,
    probability: z.number().min(0).max(1).optional(),
    times: z.number().int().positive().optional(),
    sequence: z.array(stepSchema).min(1).optional(),
  })
  .refine(afterNeedsAnswer, AFTER_NEEDS_ANSWER);

export type FaultRuleInput = z.input<typeof faultRuleSchema>;
type Answer = z.output<typeof answerSchema>;

export interface FaultRule extends z.output<typeof faultRuleSchema> {
  id: number;
  /** Matching requests seen so far (drives `times` and `sequence`). */
  hits: number;
}

/** What the server must do for one request. */
export type FaultDecision =
  | { kind: 'pass'; latencyMs: number }
  | { kind: 'reset'; latencyMs: number; rule: number; after: boolean }
  | {
      kind: 'answer';
      latencyMs: number;
      rule: number;
      /** The forge handles the request first; this answer replaces its own. */
      after: boolean;
      status: number;
      retryAfter?: number;
      rateLimitReset?: number;
      body?: unknown;
    };

export class FaultRules {
  private rules: FaultRule[] = [];
  private nextId = 1;

  constructor(private readonly random: () => number = Math.random) {}

  add(input: FaultRuleInput): FaultRule {
    const parsed = faultRuleSchema.parse(input);
    const rule: FaultRule = { ...parsed, id: this.nextId++, hits: 0 };
    this.rules.push(rule);
    return rule;
  }

  list(): readonly FaultRule[] {
    return this.rules;
  }

  remove(id: number): boolean {
    const before = this.rules.length;
    this.rules = this.rules.filter((rule) => rule.id !== id);
    return this.rules.length !== before;
  }

  clear(): void {
    this.rules = [];
  }

  decide(method: string, path: string, nowEpochSeconds: number): FaultDecision {
    let latencyMs = 0;
    for (const rule of this.rules) {
      if (!inScope(rule, method, path)) continue;
      const step = this.step(rule);
      if (step === 'exhausted' || step === 'pass') continue;
      const answer: Answer = typeof step === 'number' ? { status: step } : step === 'reset' ? { reset: true } : step;
      latencyMs += answer.latency_ms ?? 0;
      const after = answer.after === true;
      if (answer.reset) return { kind: 'reset', latencyMs, rule: rule.id, after };
      if (answer.status !== undefined) {
        const reset =
          answer.ratelimit_reset ??
          (answer.ratelimit_reset_in !== undefined ? nowEpochSeconds + answer.ratelimit_reset_in : undefined);
        return {
          kind: 'answer',
          latencyMs,
          rule: rule.id,
          after,
          status: answer.status,
          retryAfter: answer.retry_after,
          rateLimitReset: reset,
          body: answer.body,
        };
      }
    }
    return { kind: 'pass', latencyMs };
  }

  /** Advances the rule for one matching request and says what it does to it. */
  private step(rule: FaultRule): z.output<typeof stepSchema> | 'exhausted' {
    if (rule.sequence) {
      const step = rule.sequence[rule.hits];
      rule.hits += 1;
      return step ?? 'exhausted';
    }
    if (rule.times !== undefined && rule.hits >= rule.times) return 'exhausted';
    if (rule.probability !== undefined && this.random() >= rule.probability) return 'pass';
    rule.hits += 1;
    return rule;
  }
}

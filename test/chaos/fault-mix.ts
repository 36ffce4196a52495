import type { FaultRuleInput } from '../../src/sandbox';
import type { Random } from './random';

/**
 * The faults of the chaos scenarios: a quarter of all API requests, of every method and endpoint, answered by a fault.
 * They are laid out in advance from the seed as one `sequence` rule per method (the n-th GET meets the n-th step of
 * the GET sequence), so a seed replays the same faults in the same order; which request meets which step still
 * depends on process timing. A sequence per method keeps the many reads from using up the writes' share.
 *
 * Shares, in percent of the requests of each method:
 * - 429 with `Retry-After: 1`, 429 without it but with `RateLimit-Reset: 1` (the draft's delta-seconds form, which
 *   the client reads as "1 s"), and a bare 429 with no hint at all, after which the client backs off from about 1 s;
 * - 500 (writes only), 502, 503 and connection resets before the forge acts (nothing happened). A 500 is final for
 *   the client, so on a read it only fails the pass that read; on a write it is a refusal the daemon must make up for;
 * - 502 and connection resets after the forge acted (it happened; the client cannot know).
 */
type Step = Exclude<FaultRuleInput['sequence'], undefined>[number];

const WRITE_SHARES: readonly { percent: number; step: Step }[] = [
  { percent: 1, step: { status: 429, retry_after: 1 } },
  { percent: 2, step: { status: 429, ratelimit_reset: 1 } },
  { percent: 1, step: 429 },
  { percent: 2, step: 500 },
  { percent: 4, step: 502 },
  { percent: 2, step: 503 },
  { percent: 3, step: 'reset' },
  { percent: 5, step: { status: 502, after: true } },
  { percent: 5, step: { reset: true, after: true } },
];
const READ_SHARES: readonly { percent: number; step: Step }[] = [
  ...WRITE_SHARES.filter((share) => share.step !== 500),
  { percent: 2, step: 504 },
];

export const FAULT_PERCENT = WRITE_SHARES.reduce((sum, share) => sum + share.percent, 0);

/** Long enough for the busiest method of the longest scenario; after the end every request passes. */
const SEQUENCE_LENGTH = 20_000;

export function faultRules(random: Random): FaultRuleInput[] {
  return ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].map((method) => {
    const methodRandom = random.fork(method);
    const shares = method === 'GET' ? READ_SHARES : WRITE_SHARES;
    const sequence = Array.from({ length: SEQUENCE_LENGTH }, () => {
      let draw = methodRandom.next() * 100;
      for (const share of shares) {
        if (draw < share.percent) return share.step;
        draw -= share.percent;
      }
      return 'pass' as const satisfies Step;
    });
    return { method, path: '^/api/v4/', sequence };
  });
}

/**
 * Beside the mix, in every scenario with faults: the answer to the first issuing call of each token kind lost after
 * the forge acted (a rotate, an overlap's create, a deploy token's create), since the mix alone meets the four or five
 * such calls of a run too rarely. The value exists only in that answer: the daemon must recover the family without a
 * second token surviving and without tripping reuse detection. After the mix's rules, so they do not shift its
 * sequences; a request the mix faults first leaves them for the next.
 */
export function tokenFaultRules(): FaultRuleInput[] {
  return [
    {
      method: 'POST',
      path: '^/api/v4/(projects|groups)/[^/]+/access_tokens/\\d+/rotate$',
      status: 502,
      after: true,
      times: 1,
    },
    { method: 'POST', path: '^/api/v4/projects/[^/]+/access_tokens$', reset: true, after: true, times: 1 },
    { method: 'POST', path: '^/api/v4/projects/[^/]+/deploy_tokens$', status: 502, after: true, times: 1 },
  ];
}

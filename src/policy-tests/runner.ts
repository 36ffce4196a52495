import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Logger } from '@nestjs/common';
import type { Clock } from '../clock';
import { systemClock } from '../clock';
import type { PolicyConfig } from '../config/policy-type';
import type { Decision, Outcome, UnobservedTarget } from '../engine/decision';
import { ProjectDiscovery } from '../engine/discovery';
import { handContext } from '../engine/hand-context';
import { MemoryDiscoveryCache, MemoryPolicyState } from '../engine/memory-stores';
import { dryRunOutcomes } from '../engine/pass-cap';
import type { PolicyType } from '../engine/policy';
import { GitlabClient } from '../gitlab/client';
import { ApiError } from '../gitlab/transport/errors';
import { startSandbox } from '../sandbox';
import type { ParsedWorld } from '../sandbox/world';
import type { PolicyTest } from './test-file';

/**
 * One test's pass: the policy's own observe and decide, dry, against a sandbox serving the test's world in this
 * process, on the test's clock, with empty stores in memory (as a daemon's first pass on an empty Redis) and empty
 * local folders. Nothing reaches another machine, and no secret is needed: the token is one made for the pass.
 */

export interface DecidedPass {
  readonly decisions: readonly Decision[];
  /** What a dry pass records for each decision, in order. */
  readonly outcomes: readonly Outcome[];
  /** The targets the pass could not read, with the sandbox's answer. */
  readonly unobserved: readonly UnobservedTarget[];
  /** What the policy logged as a warning (a glob's project gone, a group not found). */
  readonly warnings: readonly string[];
  /** Set when the pass failed as a whole (observing or deciding threw). */
  readonly error?: string;
}

/** Discovery refreshes once per pass here: one pass is all there is. */
const DISCOVERY_INTERVAL_MS = 10 * 60_000;
/** Targets read at once, as a daemon with the default `gitlab.concurrency` reads them. */
const CONCURRENCY = 8;

/** A pass of `policy` (its entry in the policy file, stand-ins filled in) as `test` describes it. */
export async function runPolicyTest(test: PolicyTest, policy: PolicyConfig, runner: PolicyType): Promise<DecidedPass> {
  const folders = mkdtempSync(join(tmpdir(), 'forgewarden-test-'));
  const token = `forgewarden-test-${randomBytes(16).toString('hex')}`;
  const sandbox = await startSandbox({ world: servedWorld(test, token) });
  const client = new GitlabClient({
    url: sandbox.url,
    token,
    maxRequestsPerMinute: 0,
    concurrency: CONCURRENCY,
    retry: { maxAttempts: 1 },
  });
  const logger = new CollectingLogger(`policy:${policy.name}`);
  try {
    const config =
      runner.withFolders?.(policy, (key) => {
        const folder = join(folders, key);
        mkdirSync(folder, { recursive: true });
        return folder;
      }) ?? policy;
    const now = new Date(test.now);
    const clock: Clock = { ...systemClock, now: () => now.getTime() };
    const context = handContext(client, config, new MemoryPolicyState(), {
      now,
      clock: { now: () => new Date(now), sleep: (ms) => systemClock.sleep(ms) },
      mode: 'plan',
      occasion: test.occasion,
      logger,
      concurrency: CONCURRENCY,
      discovery: new ProjectDiscovery(client, new MemoryDiscoveryCache(), clock, DISCOVERY_INTERVAL_MS, logger),
    });
    try {
      const snapshot = await runner.observe(config, context);
      const decisions = runner.decide(config, snapshot, now);
      return {
        decisions,
        outcomes: dryRunOutcomes(decisions, runner.limits(config).actionsPerPass),
        unobserved: context.unobserved.list(),
        warnings: logger.warnings,
      };
    } catch (error) {
      const message =
        error instanceof ApiError ? error.summary : error instanceof Error ? error.message : String(error);
      return {
        decisions: [],
        outcomes: [],
        unobserved: context.unobserved.list(),
        warnings: logger.warnings,
        error: message,
      };
    }
  } finally {
    await client.close();
    await sandbox.close();
    rmSync(folders, { recursive: true, force: true });
  }
}

/** The test's world at the test's time, with the pass's token given to the user the policy acts as. */
function servedWorld(test: PolicyTest, token: string): ParsedWorld {
  const as = test.as.toLowerCase();
  return {
    ...test.world,
    now: test.now,
    users: test.world.users.map((user) =>
      user.username.toLowerCase() === as ? { ...user, tokens: [...user.tokens, token] } : user,
    ),
  };
}

/** The policy's log lines, kept for the report rather than printed among the results. */
class CollectingLogger extends Logger {
  readonly warnings: string[] = [];

  override log(): void {}
  override debug(): void {}
  override verbose(): void {}
  override warn(message: unknown): void {
    this.warnings.push(String(message));
  }
  override error(message: unknown): void {
    this.warnings.push(String(message));
  }
}

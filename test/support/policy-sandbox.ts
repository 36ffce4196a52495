import { handContext } from '../../src/engine/hand-context';
import type { PolicyContext } from '../../src/engine/policy';
import { MemoryPolicyState as MemoryState } from '../../src/engine/memory-stores';
import type { PolicyConfig } from '../../src/config/policy-type';

/** The policy of a context a test builds without naming one. */
const UNTYPED_POLICY: PolicyConfig = { name: 'policy-sandbox', type: 'none' };
import type { GitlabClient } from '../../src/gitlab';
import { DEFAULT_RETRY_OPTIONS } from '../../src/gitlab/transport/retry';
import type { RunningSandbox, SandboxOptions, World } from '../../src/sandbox';
import { useSandboxClients } from './sandbox-clients';

/** PolicyState as the engine keeps it in Redis, in memory (`values` for a test to look at or set). */
export { MemoryPolicyState as MemoryState } from '../../src/engine/memory-stores';

export interface PolicySandboxOptions {
  /** The token of the policy's client. */
  readonly token: string;
  /** Seeds each test's sandbox; without it, each test (or its beforeEach) calls start() with its own world. */
  readonly world?: () => World;
  /** How the sandbox starts, besides its world. */
  readonly sandbox?: Omit<SandboxOptions, 'world'>;
}

export interface PolicySandbox {
  /** The sandbox of the current test. */
  readonly sandbox: RunningSandbox;
  /** The policy's client with the token given, retrying as the daemon's does (on a fake clock, so nobody waits). */
  readonly client: GitlabClient;
  /** The policy's state of the current test, fresh for each. */
  readonly state: MemoryState;
  /** Another client of the sandbox, with `token`. */
  clientWith(token: string): GitlabClient;
  /**
   * What the engine hands observe, commit and actions: the client, the state and the sandbox's time (see handContext);
   * `fields` replace parts.
   */
  context(fields?: Partial<PolicyContext>): PolicyContext;
  /** Starts the test's sandbox on `world` (without the `world` option). */
  start(world: World): Promise<void>;
}

/**
 * A policy type's observer and actions against the sandbox forge, without the engine: per test a sandbox, the
 * policy's client of it and its state in memory, all gone after the test.
 */
export function usePolicySandbox(options: PolicySandboxOptions): PolicySandbox {
  const forge = useSandboxClients(options.world, {
    sandbox: options.sandbox,
    clients: { retry: DEFAULT_RETRY_OPTIONS },
  });
  let client: GitlabClient | undefined;
  let state = new MemoryState();

  beforeEach(() => {
    client = undefined;
    state = new MemoryState();
  });

  const clientWith = (token: string): GitlabClient => forge.client(token);
  const policyClient = (): GitlabClient => (client ??= clientWith(options.token));
  return {
    get sandbox() {
      return forge.sandbox;
    },
    get client() {
      return policyClient();
    },
    get state() {
      return state;
    },
    clientWith,
    context(fields = {}) {
      // The sandbox's time; a policy of no type unless the test gives one (an action that reads its configuration needs it).
      const clock = forge.sandbox.state.clock;
      return handContext(policyClient(), fields.policy ?? UNTYPED_POLICY, state, {
        now: clock.date(),
        clock: { now: () => clock.date(), sleep: (ms) => clock.sleep(ms) },
        ...fields,
      });
    },
    start: (world) => forge.start(world),
  };
}

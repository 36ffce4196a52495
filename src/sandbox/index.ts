import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { apiRouter } from './api';
import { controlRouter } from './control';
import { FaultRules } from './faults';
import { createSandboxServer } from './http/server';
import { SandboxState } from './state';
import { loadWorld, parseWorld, type ParsedWorld, type World } from './world';

export { SandboxState } from './state';
export type * from './state';
export {
  WorldError,
  loadWorld,
  parseWorld,
  parseWorldYaml,
  type ParsedWorld,
  type World,
  type WorldProblem,
} from './world';
export { FaultRules, type FaultRuleInput, type FaultRule } from './faults';
export { BULK_DELETE_LIMIT_MESSAGE } from './api/registry';

/** The world served when none is given: the demo world shipped with the project. */
export const DEMO_WORLD_PATH = resolve(__dirname, '../../config/sandbox/demo-world.yml');

export interface SandboxOptions {
  /** Default 127.0.0.1: the control API has no authentication. */
  host?: string;
  /** 0 (the default) picks a free port. */
  port?: number;
  /** A world object (validated) or the path of a YAML world file; the demo world when omitted. */
  world?: World | string;
  /** Delay before accepted bulk tag deletions and repository deletions take effect; default 50 ms. */
  bulkDeleteDelayMs?: number;
}

export interface RunningSandbox {
  /** e.g. `http://127.0.0.1:PORT`; the API is under `/api/v4`, the control API under `/__sandbox`. */
  url: string;
  state: SandboxState;
  close(): Promise<void>;
}

export async function startSandbox(options: SandboxOptions = {}): Promise<RunningSandbox> {
  const world: ParsedWorld =
    typeof options.world === 'string'
      ? loadWorld(options.world)
      : options.world !== undefined
        ? parseWorld(options.world)
        : loadWorld(DEMO_WORLD_PATH);
  const state = new SandboxState(world, new FaultRules(), { bulkDeleteDelayMs: options.bulkDeleteDelayMs });
  const server = createSandboxServer(state, apiRouter(), controlRouter());
  const host = options.host ?? '127.0.0.1';

  await new Promise<void>((resolveListen, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolveListen();
    });
  });
  const address = server.address() as AddressInfo;
  const urlHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${urlHost}:${address.port}`;
  // Webhook deliveries name the instance (`X-Gitlab-Instance`) and its addresses without a request to take them from.
  state.hooks.instanceUrl = url;

  return {
    url,
    state,
    close: () =>
      new Promise<void>((resolveClose, reject) => {
        state.cancelBackgroundWork();
        // A request still held would keep its connection, and the close, waiting.
        state.holds.releaseAll();
        server.close((error) => (error ? reject(error) : resolveClose()));
        server.closeAllConnections();
      }),
  };
}

import type { RunningSandbox } from '../../src/sandbox';
import { ADMIN_TOKEN } from './world-builders';

/**
 * Playing a person on the sandbox forge while the bot works: a request of the bot held at the forge's door (see
 * src/sandbox/holds.ts) marks the exact moment, the person acts through the API with the administrator's token, and
 * the bot's request then goes on.
 */

/** Where the person steps in: the bot's request matching `method` and `path` (a regex), after `after` such requests. */
export interface Moment {
  readonly method: string;
  readonly path: string;
  readonly after?: number;
}

/** Holds the next API request at `moment`. */
export function holdRequest(
  sandbox: RunningSandbox,
  moment: Moment,
): { reached: () => Promise<void>; release: () => void } {
  const { id } = sandbox.state.holds.add({ method: moment.method, path: moment.path, after: moment.after ?? 0 });
  return {
    reached: () => sandbox.state.holds.reached(id),
    release: () => void sandbox.state.holds.release(id),
  };
}

/**
 * Runs `work` (a pass of the bot); when it reaches the held request, `person` changes the forge, then the request goes
 * on. Returns what `work` returned. Fails when `work` ends without reaching the hold: the moment never came.
 */
export async function whileHeld<T>(
  sandbox: RunningSandbox,
  at: Moment,
  work: () => Promise<T>,
  person: () => Promise<void>,
): Promise<T> {
  const hold = holdRequest(sandbox, at);
  let ended = false;
  const running = work().finally(() => {
    ended = true;
  });
  try {
    await Promise.race([hold.reached(), running]);
    if (ended) throw new Error(`the bot never sent ${at.method} ${at.path}`);
    await person();
  } finally {
    hold.release();
  }
  return running;
}

/** A request as a person makes it, with the administrator's token (or `token`); answers status and JSON body. */
export async function asPerson(
  sandbox: RunningSandbox,
  method: string,
  path: string,
  body?: unknown,
  token = ADMIN_TOKEN,
): Promise<{ status: number; json: unknown }> {
  const response = await fetch(`${sandbox.url}/api/v4${path}`, {
    method,
    headers: { 'PRIVATE-TOKEN': token, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await response.text();
  return { status: response.status, json: text ? (JSON.parse(text) as unknown) : undefined };
}

/** A control-API call (`/__sandbox/...`): archive a project, delete a user, narrow a token's access. */
export async function control(sandbox: RunningSandbox, method: string, path: string, body?: unknown): Promise<number> {
  const response = await fetch(`${sandbox.url}/__sandbox${path}`, {
    method,
    ...(body !== undefined ? { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) } : {}),
  });
  await response.arrayBuffer();
  return response.status;
}

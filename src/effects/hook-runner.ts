import { execFile } from 'node:child_process';
import { redactor } from '../logging/redact';

/** Variables the daemon reads its own credentials from; a hook gets none of them. */
const DAEMON_SECRETS = new Set(['GITLAB_TOKEN', 'REDIS_URL']);

/** What every hook gets from the daemon's environment, so a shell script finds its tools and speaks its language. */
const HOOK_BASE_ENV = ['PATH', 'HOME', 'LANG'];

/**
 * The environment of a hook: a minimal one (PATH, HOME, LANG and the variables the policy names), never the daemon's
 * whole environment, and never its credentials (the forge token, a Redis URL that may hold a password, or any
 * variable holding a configured secret), plus the facts the hook is run with. A hook that needs the forge brings its
 * own credentials.
 */
export function hookEnvironment(
  daemon: NodeJS.ProcessEnv,
  passed: readonly string[],
  facts: Record<string, string>,
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const name of [...HOOK_BASE_ENV, ...passed]) {
    const value = daemon[name];
    if (value === undefined || DAEMON_SECRETS.has(name) || redactor.holdsSecret(value)) continue;
    env[name] = value;
  }
  return { ...env, ...facts };
}

/** A command a policy runs when something happened (a new key in place), by /bin/sh, as a child of the daemon. */
export class HookRunner {
  /** `timeoutMs`: how long a hook may run before it counts as failed. */
  constructor(private readonly timeoutMs: number) {}

  /**
   * Runs `command` with the facts in its environment. Its output is neither logged nor returned: a script handed a
   * key's path could print the key. `stdin`: a secret handed to the hook (a token's value), on standard input only,
   * never in argv or the environment, where other processes of the machine may read it. Resolves to why it failed, or
   * undefined.
   */
  run(
    command: string,
    passed: readonly string[],
    facts: Record<string, string>,
    stdin?: string,
  ): Promise<string | undefined> {
    return new Promise((resolve) => {
      const child = execFile(
        '/bin/sh',
        ['-c', command],
        { env: hookEnvironment(process.env, passed, facts), timeout: this.timeoutMs, maxBuffer: 1024 * 1024 },
        (error) => {
          if (!error) return resolve(undefined);
          // Exit status in `code` (a number), or why it could not start (a string such as ENOENT); `killed` on timeout.
          const { code, signal, killed } = error as { code?: unknown; signal?: unknown; killed?: unknown };
          if (killed === true) return resolve(`timed out after ${this.timeoutMs / 1000}s`);
          if (typeof code === 'number') return resolve(`exited with code ${code}`);
          resolve(
            typeof signal === 'string'
              ? `killed by ${signal}`
              : `could not run: ${typeof code === 'string' ? code : 'unknown error'}`,
          );
        },
      );
      // A hook that does not read its input closes the pipe early (EPIPE): its exit status says how it went.
      child.stdin?.on('error', () => undefined);
      child.stdin?.end(stdin ?? '');
    });
  }
}

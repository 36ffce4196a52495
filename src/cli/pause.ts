import { userInfo, hostname } from 'node:os';
import { PauseSwitch } from '../engine/pause-switch';
import { unknownPolicy } from './plan';
import { withApp } from './with-app';

/** Longer reasons are cut: the reason is for people reading the console and the audit trail, not a log. */
const MAX_REASON = 500;

/**
 * `forgewarden pause NAME --reason TEXT`: every replica stops starting actions for the policy from its next action on
 * (passes still observe and decide), until `forgewarden resume NAME`. Reads and writes Redis only: no forge, no token.
 */
export async function pauseCommand(name: string, options: { config?: string; reason?: string }): Promise<number> {
  const reason = (options.reason ?? '').trim();
  if (reason === '') {
    process.stderr.write(
      'forgewarden pause: say why with --reason TEXT: it is what the console, the audit trail and whoever resumes it read\n',
    );
    return 2;
  }
  return withApp(
    'pause',
    options,
    async (app) => {
      const change = await app.get(PauseSwitch).pause(name, reason.slice(0, MAX_REASON), whoRuns());
      const was = change.before
        ? ` (it was paused already since ${change.before.since}: ${change.before.reason}; the new reason replaces it)`
        : '';
      process.stdout.write(
        `${name} paused${was}: every replica starts no action for it until "forgewarden resume ${name}"\n`,
      );
      return 0;
    },
    'none',
    unknownPolicy(name),
  );
}

/** `forgewarden resume NAME`: the policy acts again from its next pass on. */
export async function resumeCommand(name: string, options: { config?: string }): Promise<number> {
  return withApp(
    'resume',
    options,
    async (app) => {
      const change = await app.get(PauseSwitch).resume(name, whoRuns());
      process.stdout.write(
        change.before
          ? `${name} resumed (it was paused since ${change.before.since} by ${change.before.by}: ${change.before.reason})\n`
          : `${name} was not paused\n`,
      );
      return 0;
    },
    'none',
    unknownPolicy(name),
  );
}

/** The person at the terminal, as the audit trail names them. */
function whoRuns(): string {
  let user = process.env.USER ?? '';
  try {
    user = userInfo().username;
  } catch {
    // No passwd entry (a container's random uid): the environment's word is all there is.
  }
  return `${user || 'unknown'}@${hostname()} (command line)`;
}

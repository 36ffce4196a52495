import { writeFileSync } from 'node:fs';
import { basename } from 'node:path';
import { stringify } from 'yaml';
import { DaemonToken } from '../forge/daemon-token';
import { TokenFileError } from '../forge/token-file';
import { GitlabClient } from '../gitlab/client';
import { policyType } from '../policies';
import { recordWorld } from '../policy-tests/recorder';
import { configPath, EXIT_INVALID_CONFIG, loadOrReport } from './config-file';
import { EXIT_USAGE } from './usage';

export interface RecordCommandOptions {
  config?: string;
  policy?: string;
  out?: string;
  maxProjects?: string;
  anonymize?: boolean;
}

/**
 * Records, read-only, what one policy reads from the live forge as a world file that `forgewarden test` and
 * `forgewarden sandbox --world` take as they are, without its secrets; prints a test of what the policy decides on it
 * now, to paste into the test file.
 */
export async function recordCommand(options: RecordCommandOptions): Promise<number> {
  const maxProjects = Number(options.maxProjects ?? '100');
  if (!Number.isInteger(maxProjects) || maxProjects < 1) {
    process.stderr.write(
      `forgewarden record: --max-projects must be a whole number of 1 or more (got "${options.maxProjects}")\n`,
    );
    return EXIT_USAGE;
  }
  if (options.policy === undefined || options.out === undefined) {
    process.stderr.write('forgewarden record: --policy NAME and --out FILE are required\n');
    return EXIT_USAGE;
  }
  const file = configPath(options.config);
  const config = loadOrReport(file);
  if (!config) return EXIT_INVALID_CONFIG;
  const policy = config.policies.find((candidate) => candidate.name === options.policy);
  const runner = policy && policyType(policy.type);
  if (!policy || !runner) {
    process.stderr.write(
      `forgewarden record: no policy named "${options.policy}"; configured: ${config.policies.map((p) => p.name).join(', ') || 'none'}\n`,
    );
    return EXIT_USAGE;
  }
  let token: DaemonToken;
  try {
    token = DaemonToken.of(config.gitlab);
  } catch (error) {
    if (!(error instanceof TokenFileError)) throw error;
    process.stderr.write(`forgewarden record: ${error.message}\n`);
    return 1;
  }
  const client = new GitlabClient({
    url: config.gitlab.url,
    token,
    timeoutMs: config.gitlab.timeout,
    connectTimeoutMs: config.gitlab.connect_timeout,
    concurrency: config.gitlab.concurrency,
    // The file's budget, counted in this process: a recording is a few hundred reads, spread as the daemon's are.
    maxRequestsPerMinute: config.gitlab.max_requests_per_minute,
    warn: () => undefined,
  });
  const now = new Date();
  try {
    const recording = await recordWorld({
      policy,
      runner,
      client,
      now,
      maxProjects,
      anonymise: options.anonymize === true,
    });
    const header = [
      `# Recorded by forgewarden record for policy ${policy.name} at ${now.toISOString()}: what its observe read, and no secret`,
      `# (integration secrets replaced, the token's user given the stand-in token ${JSON.stringify(recording.world.users?.[0]?.tokens?.[0] ?? '')}).`,
      '',
    ].join('\n');
    writeFileSync(options.out, header + stringify(recording.world, { lineWidth: 0 }));
    const { world } = recording;
    const tally = [
      `${world.projects?.length ?? 0} projects`,
      `${world.groups?.length ?? 0} groups`,
      `${world.users?.length ?? 0} users`,
    ].join(', ');
    process.stdout.write(`recorded ${tally} (${recording.answers} answers) into ${options.out}\n`);
    if (recording.cut > 0)
      process.stdout.write(`left out ${recording.cut} projects over --max-projects ${maxProjects}\n`);
    for (const target of recording.unobserved) process.stdout.write(`not read: ${target.target}: ${target.reason}\n`);
    const test = {
      name: `what ${policy.name} decided on ${now.toISOString().slice(0, 10)}`,
      policy: policy.name,
      // A test file reads its world relative to itself: this names it for a test file beside the world.
      world: basename(options.out),
      now: now.toISOString(),
      as: recording.as,
      expect: {
        decisions: recording.decisions.map((decision) => ({
          action: decision.action,
          target: decision.target,
          reason: decision.reason,
        })),
        no_other_actions: true,
        ...(recording.unobserved.length > 0 ? { not_read: recording.unobserved.map((target) => target.target) } : {}),
      },
    };
    process.stdout.write(
      `\na test of what it decides on this world now (paste it under tests: in a test file in the world's folder; a test file reads its world: relative to itself):\n\n${stringify([test], { lineWidth: 0 })}`,
    );
    return 0;
  } catch (error) {
    process.stderr.write(`forgewarden record: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  } finally {
    await client.close();
  }
}

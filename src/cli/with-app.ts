import type { INestApplicationContext } from '@nestjs/common';
import { createApp } from '../bootstrap';
import type { AppConfig } from '../config/schema';
import { EngineService } from '../engine/engine.service';
import { ForgeHealth, forgeFingerprint } from '../forge/forge-health';
import { AppLogger, loggerOptionsFromEnv } from '../logging/logger';
import { configPath, EXIT_INVALID_CONFIG, loadOrReport } from './config-file';
import { EXIT_USAGE } from './usage';

export interface AppCommandOptions {
  config?: string;
  /** `--dry-run` / `--no-dry-run`: overrides the file's `dry_run` and every policy's own, for this run only. */
  dryRun?: boolean;
}

/**
 * Runs a one-shot command (plan, once, audit, hooks, restore) inside the application without HTTP or queue workers;
 * stdout is the command's result. `forge` and `usageProblem`: see docs/architecture.md, "One-shot commands".
 */
export async function withApp(
  command: string,
  options: AppCommandOptions,
  body: (app: INestApplicationContext, config: AppConfig) => Promise<number>,
  forge: 'check' | 'look' | 'none' = 'check',
  usageProblem?: (config: AppConfig) => string | undefined,
): Promise<number> {
  const file = configPath(options.config);
  const loaded = loadOrReport(file, forge === 'none' ? withoutForge(process.env) : process.env);
  if (!loaded) return EXIT_INVALID_CONFIG;
  const problem = usageProblem?.(loaded);
  if (problem !== undefined) {
    process.stderr.write(`forgewarden ${command}: ${problem}\n`);
    return EXIT_USAGE;
  }
  const config = options.dryRun === undefined ? loaded : overrideDryRun(loaded, options.dryRun);
  const logger = new AppLogger({
    ...loggerOptionsFromEnv(process.env, process.stderr),
    level: process.env.LOG_LEVEL || 'warn',
  });
  // A wait is said at once, beside the result (stdout), as the command's own line.
  const say = (line: string) => void process.stderr.write(`forgewarden ${command}: ${line}\n`);
  let app: INestApplicationContext;
  try {
    // A person or a cron job waits on a one-shot command: a refused Redis ends it at once, not after connect_timeout.
    ({ app } = await createApp(config, file, logger, { http: false, giveUpWhenRefused: true, onWait: say }));
  } catch (error) {
    logger.debug(`forgewarden ${command}`, error instanceof Error ? error.stack : undefined);
    await logger.flush();
    process.stderr.write(`forgewarden ${command}: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
  try {
    if (forge !== 'none') {
      const status = await app.get(ForgeHealth).checkAtStart(say);
      if (status.state !== 'ok') {
        process.stderr.write(`forgewarden ${command}: ${status.message}\n`);
        return 1;
      }
      await app
        .get(EngineService)
        .settleRecords(forgeFingerprint(config, status.identity), { claim: forge === 'check' });
    }
    return await body(app, config);
  } finally {
    await app.close();
    await logger.flush();
  }
}

/** The same configuration with one `dry_run` for the file and every policy. */
export function overrideDryRun(config: AppConfig, dryRun: boolean): AppConfig {
  return { ...config, dry_run: dryRun, policies: config.policies.map((policy) => ({ ...policy, dry_run: dryRun })) };
}

/**
 * The environment for a command that never talks to the forge: GITLAB_URL and GITLAB_TOKEN, when unset, get stand-ins
 * so that a file reading them (`token: ${GITLAB_TOKEN}`) still loads. No request is ever sent with them.
 */
function withoutForge(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return {
    ...env,
    GITLAB_URL: env.GITLAB_URL || 'http://forge.invalid',
    GITLAB_TOKEN: env.GITLAB_TOKEN || 'unused-by-this-command',
  };
}

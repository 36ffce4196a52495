import { createApp } from '../bootstrap';
import { EngineService } from '../engine/engine.service';
import { configWarnings } from '../config/load';
import { formatWarning } from '../config/problems';
import type { AppConfig } from '../config/schema';
import { AppLogger, loggerOptionsFromEnv } from '../logging/logger';
import { QueueService } from '../queue/queue.service';
import { RedisUnavailableError } from '../redis/connection';
import { configPath, EXIT_INVALID_CONFIG, loadOrReport } from './config-file';

/**
 * The daemon: starts, says once what it runs, works until SIGTERM or SIGINT, then stops taking work, lets running
 * work finish within `shutdown_timeout`, closes queues and connections and exits 0. A second signal exits at once.
 */
export async function runCommand(options: { config?: string }): Promise<number> {
  const file = configPath(options.config);
  const config = loadOrReport(file);
  if (!config) return EXIT_INVALID_CONFIG;

  const logger = new AppLogger(loggerOptionsFromEnv(process.env, process.stdout));
  // Valid but unsafe settings (a token sent in clear to another machine) are said once at start, as validate says them.
  for (const warning of configWarnings(config, file)) logger.warn(formatWarning(warning), 'Config');
  let started;
  try {
    started = await createApp(config, file, logger);
  } catch (error) {
    await logger.flush();
    process.stderr.write(`forgewarden run: ${startupFailure(error)}\n`);
    return 1;
  }
  const { app, httpUrl } = started;
  await app.get(EngineService).startDaemon();
  app.get(QueueService).startWorking();
  logger.log(startupLine(config, httpUrl), 'Forgewarden');

  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
  });
  const forceExit = () => {
    process.stderr.write('forgewarden run: second signal, exiting without waiting for running work\n');
    process.exit(1);
  };
  process.once('SIGTERM', forceExit);
  process.once('SIGINT', forceExit);
  logger.log(`${signal} received: finishing running work (up to ${config.shutdown_timeout / 1000}s), then exiting`, 'Forgewarden');
  await app.close();
  logger.log('stopped', 'Forgewarden');
  await logger.flush();
  return 0;
}

function startupFailure(error: unknown): string {
  if (error instanceof RedisUnavailableError) return error.message;
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'EADDRINUSE' || code === 'EACCES') {
    return `cannot serve HTTP: ${(error as Error).message} (set http.port, or 0 to turn HTTP off)`;
  }
  return error instanceof Error ? error.message : String(error);
}

export function startupLine(config: AppConfig, httpUrl: string | undefined): string {
  const policies = config.policies.map(
    (policy) => `${policy.name} (${policy.type}, ${(policy.dry_run ?? config.dry_run) ? 'dry-run' : 'acting'})`,
  );
  const what = policies.length === 0 ? 'no policies' : `${policies.length} polic${policies.length === 1 ? 'y' : 'ies'}: ${policies.join(', ')}`;
  const http = httpUrl ? `; health and metrics on ${httpUrl}` : '; HTTP off';
  return `started with ${what}${http}`;
}

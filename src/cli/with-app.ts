import type { INestApplicationContext } from '@nestjs/common';
import { createApp } from '../bootstrap';
import type { AppConfig } from '../config/schema';
import { AppLogger, loggerOptionsFromEnv } from '../logging/logger';
import { RedisUnavailableError } from '../redis/connection';
import { configPath, EXIT_INVALID_CONFIG, loadOrReport } from './config-file';

/**
 * Runs a one-shot command (plan, once, audit) inside the application without HTTP or queue workers. Logs go to
 * stderr, at warn unless LOG_LEVEL says otherwise, because stdout is the command's result.
 */
export async function withApp(
  command: string,
  options: { config?: string },
  body: (app: INestApplicationContext, config: AppConfig) => Promise<number>,
): Promise<number> {
  const file = configPath(options.config);
  const config = loadOrReport(file);
  if (!config) return EXIT_INVALID_CONFIG;
  const logger = new AppLogger({ ...loggerOptionsFromEnv(process.env, process.stderr), level: process.env.LOG_LEVEL ?? 'warn' });
  let app: INestApplicationContext;
  try {
    ({ app } = await createApp(config, file, logger, { http: false }));
  } catch (error) {
    await logger.flush();
    const message = error instanceof RedisUnavailableError || error instanceof Error ? error.message : String(error);
    process.stderr.write(`forgewarden ${command}: ${message}\n`);
    return 1;
  }
  try {
    return await body(app, config);
  } finally {
    await app.close();
    await logger.flush();
  }
}

import type { INestApplicationContext, Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { AppModule } from './app.module';
import type { AppConfig } from './config/schema';
import type { Clock } from './clock';
import type { AppLogger } from './logging/logger';
import { redactor } from './logging/redact';
import { redisTarget, redisUrlPassword, waitForRedis } from './redis/connection';

export interface StartedApp {
  readonly app: INestApplicationContext;
  /** Where /healthz, /readyz and /metrics answer, or undefined when `http.port` is 0. */
  readonly httpUrl?: string;
}

/** Registers the configuration's secrets with the redactor before anything can log them. */
export function protectSecrets(config: AppConfig): void {
  redactor.addSecret(config.gitlab.token);
  if (config.redis.url) redactor.addSecret(redisUrlPassword(config.redis.url));
  redactor.addSecret(config.redis.password);
  redactor.addSecret(config.redis.sentinel_password);
  if (config.webhooks.secret_token) redactor.addSecret(config.webhooks.secret_token);
  redactor.addSecret(config.http.console_token);
}

/**
 * Builds the Nest application for a loaded configuration: waits for Redis (saying so through `onWait`, failing with a
 * clear message after `redis.connect_timeout`, or at its first refusal with `giveUpWhenRefused`), then wires the modules, and serves HTTP
 * when a port is configured (the one-shot commands pass `http: false`).
 */
export async function createApp(
  config: AppConfig,
  configFile: string,
  logger: AppLogger,
  options: {
    http?: boolean;
    modules?: readonly Type[];
    clock?: Clock;
    giveUpWhenRefused?: boolean;
    onWait?: (line: string) => void;
    stop?: AbortSignal;
  } = {},
): Promise<StartedApp> {
  protectSecrets(config);
  const { giveUpWhenRefused, onWait, stop } = options;
  await waitForRedis(redisTarget(config.redis), config.redis.connect_timeout, { giveUpWhenRefused, onWait, stop });
  const module = AppModule.forRoot(config, configFile, options.modules, options.clock);
  if (config.http.port === 0 || options.http === false) {
    const app = await NestFactory.createApplicationContext(module, { logger, abortOnError: false });
    await app.init();
    return { app };
  }
  // No body parser: the one route that takes a body (webhooks) reads it itself, with its own limit and checks.
  const app = await NestFactory.create<NestExpressApplication>(module, {
    logger,
    abortOnError: false,
    bodyParser: false,
  });
  app.disable('x-powered-by');
  await app.listen(config.http.port, config.http.host);
  const address = app.getHttpServer().address();
  const port = typeof address === 'object' && address ? address.port : config.http.port;
  return {
    app,
    httpUrl: `http://${config.http.host.includes(':') ? `[${config.http.host}]` : config.http.host}:${port}`,
  };
}

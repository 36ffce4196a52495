import type { INestApplicationContext } from '@nestjs/common';
import { createApp } from '../bootstrap';
import { EngineService } from '../engine/engine.service';
import { ForgeHealth, forgeFingerprint, type TokenIdentity } from '../forge/forge-health';
import { OwnTokenService } from '../forge/own-token.service';
import { policyType } from '../policies';
import { configWarnings } from '../config/load';
import { formatWarning } from '../config/problems';
import type { AppConfig } from '../config/schema';
import { AppLogger, loggerOptionsFromEnv } from '../logging/logger';
import { QueueService } from '../queue/queue.service';
import { RedisUnavailableError } from '../redis/connection';
import { configPath, EXIT_INVALID_CONFIG, loadOrReport, reportedProblems } from './config-file';
import { startedByPackageScript, watchParent } from './parent-watch';
import { parsePort, portProblem, tryListen } from './ports';
import { StopSignals } from './stop-signals';
import { EXIT_USAGE } from './usage';

/**
 * The daemon: starts, asks the forge who the token is (a refused token ends it at once), says once what it runs,
 * passes each interval policy at once, works until SIGTERM or SIGINT, then stops taking work, lets running work finish
 * within `shutdown_timeout`, closes queues and connections and exits 0. A later second signal exits at once. SIGHUP reloads
 * the policy file.
 */
export async function runCommand(options: { config?: string; httpPort?: string }): Promise<number> {
  const file = configPath(options.config);
  const loaded = loadOrReport(file);
  if (!loaded) return EXIT_INVALID_CONFIG;
  const config = withHttpPort(loaded, options.httpPort);
  if (typeof config === 'string') {
    process.stderr.write(`forgewarden run: ${config}\n`);
    return EXIT_USAGE;
  }
  // A taken port is said before Redis and the forge are waited for: nothing the daemon does there would mend it.
  const portTaken =
    config.http.port === 0
      ? undefined
      : portProblem(
          await tryListen(config.http.host, config.http.port),
          config.http.host,
          config.http.port,
          choosePort(file),
        );
  if (portTaken) {
    process.stderr.write(`forgewarden run: ${portTaken}\n`);
    return EXIT_USAGE;
  }

  const logger = new AppLogger(loggerOptionsFromEnv(process.env, process.stdout));
  // Valid but unsafe settings (a token sent in clear to another machine) are said once at start, as validate says them.
  for (const warning of configWarnings(config, file)) logger.warn(formatWarning(warning), 'Config');
  // Signals are taken from the first moment: one that comes while the daemon starts (asking the forge may take the
  // connect timeout) ends it as cleanly as one that comes later. SIGHUP has nothing to reload until it runs.
  let stopping: string | undefined;
  const signals = new StopSignals(() => {
    process.stderr.write('forgewarden run: second signal, exiting without waiting for running work\n');
    process.exit(1);
  });
  const stopSignal = signals.requested.then((why) => (stopping = why));
  const stopWaiting = new AbortController();
  void stopSignal.then(() => stopWaiting.abort());
  // Under `npm start` the daemon must not outlive npm: npm may die without passing its signal on (or be killed), and
  // a daemon left behind would run unsupervised. Its parent's end counts as a SIGTERM.
  const unwatch = startedByPackageScript(process.env)
    ? watchParent(() => signals.request('its parent process (npm) ended'))
    : () => undefined;
  const ignore = () => undefined;
  process.on('SIGHUP', ignore);
  let started;
  try {
    started = await createApp(config, file, logger, {
      onWait: (line) => logger.warn(line, 'Redis'),
      stop: stopWaiting.signal,
    });
  } catch (error) {
    if (stopping && stopWaiting.signal.aborted) {
      logger.log(`${stopping} while waiting for Redis: stopped`, 'Forgewarden');
      await logger.flush();
      return 0;
    }
    await logger.flush();
    // Taken meanwhile, by a process that started since the look above.
    const taken = portProblem(error, config.http.host, config.http.port, choosePort(file));
    process.stderr.write(`forgewarden run: ${taken ?? startupFailure(error)}\n`);
    return taken ? EXIT_USAGE : 1;
  }
  const { app, httpUrl } = started;
  const forge = app.get(ForgeHealth);
  // One look, not the commands' retried one: a forge that cannot answer now does not hold the daemon back, whose
  // watch asks again every 5 s while /readyz says why it is not ready.
  const status = await forge.check();
  if (stopping) return shutDown(app, config, logger, stopping);
  if (status.state === 'refused' || status.state === 'not_gitlab') {
    // Waiting mends nothing here: say it once, plainly, and let the supervisor show the exit.
    await app.close();
    await logger.flush();
    process.stderr.write(`forgewarden run: ${status.message}\n`);
    return 1;
  }
  const engine = app.get(EngineService);
  try {
    if (status.state === 'ok') {
      describeToken(logger, config, status.identity);
      await engine.settleRecords(forgeFingerprint(config, status.identity));
    } else {
      logger.warn(`${status.message}; starting anyway: /readyz answers 503 until the forge answers`, 'Forgewarden');
      forge.onceIdentified((identity) => {
        describeToken(logger, config, identity);
        // Records of another forge found only now are dropped under running schedules: make them again at once.
        void engine
          .settleRecords(forgeFingerprint(config, identity))
          .then((settled) => (settled.state === 'dropped' ? engine.checkRedisData(true) : undefined))
          .catch((error: unknown) =>
            logger.error(
              `could not compare the records in Redis with the forge: ${error instanceof Error ? error.message : String(error)}`,
              'Records',
            ),
          );
      });
    }
    forge.watch();
    app.get(OwnTokenService).start();
    await engine.startDaemon();
  } catch (error) {
    // Redis went away between its start-up check and the schedules: one line, and the supervisor starts it again.
    await app.close().catch(() => undefined);
    await logger.flush();
    process.stderr.write(
      `forgewarden run: could not set up the schedules in Redis: ${error instanceof Error ? error.message : String(error)}\n`,
    );
    return 1;
  }
  app.get(QueueService).startWorking();
  logger.log(startupLine(config, httpUrl), 'Forgewarden');

  const reload = () => void reloadPolicies(app, file, config, logger);
  process.on('SIGHUP', reload);
  const why = await stopSignal;
  unwatch();
  // A reload during shutdown would start schedules on a closing app; SIGHUP now does nothing rather than end the process.
  process.off('SIGHUP', reload);
  return shutDown(app, config, logger, why);
}

/** Stops taking work, lets running work finish within `shutdown_timeout`, closes everything (see StopSignals for a second signal). */
async function shutDown(
  app: INestApplicationContext,
  config: AppConfig,
  logger: AppLogger,
  why: string,
): Promise<number> {
  logger.log(`${why}: finishing running work (up to ${config.shutdown_timeout / 1000}s), then exiting`, 'Forgewarden');
  await app.close();
  logger.log('stopped', 'Forgewarden');
  await logger.flush();
  return 0;
}

/** Who the token is, once; and each policy that needs an administrator when the token is not one. */
function describeToken(logger: AppLogger, config: AppConfig, identity: TokenIdentity): void {
  logger.log(
    `the token is ${identity.username}'s${identity.administrator ? ', an administrator' : ', not an administrator'}`,
    'Forgewarden',
  );
  if (identity.administrator) return;
  for (const warning of administratorWarnings(config)) logger.warn(warning, 'Forgewarden');
}

export function administratorWarnings(config: AppConfig): string[] {
  return config.policies.flatMap((policy) => {
    const needs = policyType(policy.type)?.needsAdministrator?.(policy);
    return needs ? [`${policy.name}: needs an administrator's token, and this one is not: ${needs}`] : [];
  });
}

/**
 * SIGHUP: reads the policy file again. A file with problems changes nothing (each problem is logged where it is); a
 * valid one takes over policies and schedules at once. The connection settings are those the process started with.
 */
async function reloadPolicies(
  app: INestApplicationContext,
  file: string,
  running: AppConfig,
  logger: AppLogger,
): Promise<void> {
  const loaded = reportedProblems(file);
  if ('problems' in loaded) {
    for (const problem of loaded.problems) logger.error(problem, 'Reload');
    logger.error(
      `SIGHUP: ${file} has ${loaded.problems.length} problem${loaded.problems.length === 1 ? '' : 's'}; the running configuration stays`,
      'Reload',
    );
    app.get(EngineService).reloadRejected(file, loaded.problems.length);
    return;
  }
  const { config } = loaded;
  for (const warning of configWarnings(config, file)) logger.warn(formatWarning(warning), 'Reload');
  const fixed = (['gitlab', 'redis', 'http', 'webhooks'] as const).filter(
    (section) => JSON.stringify(config[section]) !== JSON.stringify(running[section]),
  );
  if (fixed.length > 0) logger.warn(`SIGHUP: changes to ${fixed.join(', ')} take effect on restart`, 'Reload');
  try {
    await app.get(EngineService).reload(config);
    logger.log(
      `SIGHUP: reloaded ${file}: ${startupLine(config, undefined)
        .replace(/^started with /, '')
        .replace(/; HTTP off$/, '')}`,
      'Reload',
    );
  } catch (error) {
    // Refused before it was swapped in (the running configuration stays), or taken with its schedules not yet in Redis.
    const taken = app.get(EngineService).configStatus().ok;
    const after = taken ? 'it runs, and its schedules are repaired within 30 s' : 'the running configuration stays';
    logger.error(
      `SIGHUP: ${file} could not be applied: ${error instanceof Error ? error.message : String(error)}; ${after}`,
      'Reload',
    );
  }
}

function startupFailure(error: unknown): string {
  if (error instanceof RedisUnavailableError) return error.message;
  return error instanceof Error ? error.message : String(error);
}

/** The configuration with `--http-port` in place of `http.port`, or what is wrong with it. */
function withHttpPort(config: AppConfig, option: string | undefined): AppConfig | string {
  if (option === undefined) return config;
  const port = parsePort('--http-port', option);
  if (typeof port === 'string') return port;
  if (port === 0 && config.webhooks.enabled)
    return '--http-port 0 turns HTTP off, and the file has webhooks.enabled: the webhooks need it';
  return { ...config, http: { ...config.http, port } };
}

function choosePort(file: string): string {
  return `--http-port N (or http.port in ${file}; 0 turns HTTP off)`;
}

export function startupLine(config: AppConfig, httpUrl: string | undefined): string {
  const policies = config.policies.map(
    (policy) => `${policy.name} (${policy.type}, ${(policy.dry_run ?? config.dry_run) ? 'dry-run' : 'acting'})`,
  );
  const what =
    policies.length === 0
      ? 'no policies'
      : `${policies.length} polic${policies.length === 1 ? 'y' : 'ies'}: ${policies.join(', ')}`;
  const webhooks = config.webhooks.enabled && httpUrl ? `, webhooks at ${httpUrl}${config.webhooks.path}` : '';
  const http = httpUrl ? `; health and metrics on ${httpUrl}${webhooks}` : '; HTTP off';
  return `started with ${what}${http}`;
}

#!/usr/bin/env node
// `npm run demo`: the sandbox forge with its demo world, and one acting pass of config/demo.yml against it, with a
// summary of what was done and why; then the daemon runs on, and the demo ends by printing the address of its console
// (Ctrl-C stops it). `npm run demo -- --once` exits after the summary; `npm run demo -- --watch` skips it.
//
// Redis: the one at REDIS_URL (default redis://127.0.0.1:6379) when it answers; otherwise a redis-server started
// here on a free port and stopped afterwards. Each run uses a key prefix of its own and removes its keys at the end,
// so it never disturbs anything else in that Redis and every run starts from the same world.
'use strict';
const { spawn, spawnSync } = require('node:child_process');
const { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } = require('node:fs');
const { createServer } = require('node:net');
const { tmpdir } = require('node:os');
const { join, resolve } = require('node:path');
const Redis = require('ioredis');
const { startSandbox } = require('../dist/sandbox');

const watch = process.argv.includes('--watch');
const onlyOnce = process.argv.includes('--once');
const cli = resolve(__dirname, '../dist/main.js');
const config = resolve(__dirname, '../config/demo.yml');

async function redisAnswers(url) {
  const client = new Redis(url, {
    lazyConnect: true,
    connectTimeout: 1000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

function freePort() {
  return new Promise((done, fail) => {
    const server = createServer();
    server.on('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => done(port));
    });
  });
}

/** A Redis for the demo, and how to stop it if the demo started it. */
async function findRedis() {
  const url = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
  if (await redisAnswers(url)) return { url, stop: () => undefined };
  if (spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status !== 0) {
    console.error(
      `No Redis answers at ${url}, and redis-server is not installed.\n` +
        'Install it (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis) or set REDIS_URL.',
    );
    process.exit(1);
  }
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'forgewarden-demo-redis-'));
  const pidFile = join(dir, 'redis.pid');
  spawnSync(
    'redis-server',
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--daemonize',
      'yes',
      '--pidfile',
      pidFile,
      '--dir',
      dir,
      '--logfile',
      join(dir, 'redis.log'),
    ],
    { stdio: 'ignore' },
  );
  const started = `redis://127.0.0.1:${port}`;
  for (let i = 0; i < 100 && !(await redisAnswers(started)); i++) await new Promise((r) => setTimeout(r, 50));
  console.log(`No Redis answered at ${url}; started redis-server on port ${port} for the demo.`);
  return {
    url: started,
    stop: () => {
      try {
        process.kill(Number(readFileSync(pidFile, 'utf8')), 'SIGTERM');
      } catch {
        // already gone
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function listFiles(dir) {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath ?? entry.path, entry.name))
    .sort()
    .map((path) => ({ path, mode: statSync(path).mode & 0o777 }));
}

async function removeKeys(url, prefix) {
  const client = new Redis(url);
  let removed = 0;
  let cursor = '0';
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 500);
    if (keys.length > 0) removed += await client.del(...keys);
    cursor = next;
  } while (cursor !== '0');
  await client.quit();
  return removed;
}

/** 9464 (the daemon's default) when it is free, else any free port. */
async function consolePort() {
  return new Promise((done) => {
    const server = createServer();
    server.on('error', () => freePort().then(done));
    server.listen(9464, '127.0.0.1', () => server.close(() => done(9464)));
  });
}

/** The daemon, on, with its console: the demo ends by saying where that is, and stops on Ctrl-C. */
async function serveConsole(runCli) {
  const port = Number(process.env.FORGEWARDEN_HTTP_PORT || (await consolePort()));
  // After the summary, quiet unless something goes wrong: the console shows its passes, and its address stays the last
  // line here. With --watch there is no summary: its log is what there is to watch.
  const level = process.env.LOG_LEVEL || (watch ? 'info' : 'warn');
  const exited = runCli('run', { FORGEWARDEN_HTTP_PORT: String(port), LOG_LEVEL: level });
  let running = true;
  exited.then(() => (running = false));
  const address = `http://127.0.0.1:${port}/`;
  while (running) {
    const up = await fetch(`${address}healthz`).then(
      (answer) => answer.ok,
      () => false,
    );
    if (up) {
      console.log(`\nThe daemon runs on. Its console: ${address}   (Ctrl-C stops the demo)`);
      break;
    }
    await new Promise((done) => setTimeout(done, 200));
  }
  return exited;
}

async function main() {
  const redis = await findRedis();
  const sandbox = await startSandbox({ port: Number(process.env.SANDBOX_PORT || 0) });
  const prefix = `forgewarden-demo-${process.pid}`;
  // The key rotation policy writes the new private keys here (mode 0600); the demo removes it at the end.
  const secrets = mkdtempSync(join(tmpdir(), 'forgewarden-demo-keys-'));
  console.log(`Sandbox forge with the demo world on ${sandbox.url}/api/v4; Redis at ${redis.url}.\n`);
  const env = {
    ...process.env,
    GITLAB_URL: sandbox.url,
    GITLAB_TOKEN: 'glpat-sandbox-admin-token',
    REDIS_URL: redis.url,
    FORGEWARDEN_DEMO_PREFIX: prefix,
    FORGEWARDEN_DEMO_SECRETS: secrets,
    LOG_FORMAT: process.env.LOG_FORMAT || 'pretty',
  };
  // A process group of its own: Ctrl-C reaches only this script, which passes it on once. It reaches this script twice
  // under `npm run demo` (from the terminal and from npm): a repeat within two seconds is the same Ctrl-C, and a
  // later one is passed on too, for the daemon to take as "exit now, without draining".
  let child;
  let stopping = false;
  let stoppedAt = 0;
  const forward = (signal) => {
    if (stopping && performance.now() - stoppedAt < 2000) return;
    stopping = true;
    stoppedAt = performance.now();
    child?.kill(signal);
  };
  process.on('SIGINT', forward);
  process.on('SIGTERM', forward);
  const runCli = (command, extraEnv = {}) => {
    child = spawn(process.execPath, [cli, command, '-c', config], {
      env: { ...env, ...extraEnv },
      stdio: 'inherit',
      detached: true,
    });
    return new Promise((done) => child.on('exit', (exitCode) => done(exitCode ?? 1)));
  };
  let code = watch ? 0 : await runCli('once');
  if (!watch && code === 0) {
    const log = sandbox.state.requestLog;
    const retried = log.filter((entry) => entry.method === 'POST' && entry.path.endsWith('/retry'));
    const bulk = log.filter((entry) => entry.method === 'DELETE' && entry.path.endsWith('/tags'));
    console.log(
      `\nThe sandbox received ${log.length} API requests, ${retried.length} of them job retries` +
        `${retried.length ? `: ${retried.map((entry) => entry.path.replace('/api/v4/', '')).join(', ')}` : ''}.`,
    );
    // The forge deletes tags in the background; wait for it, then show what is left.
    await sandbox.state.whenIdle();
    for (const entry of bulk) {
      const repositoryId = Number(/repositories\/(\d+)\/tags$/.exec(entry.path)[1]);
      const left = sandbox.state
        .tags(repositoryId)
        .map((tag) => tag.name)
        .sort();
      console.log(`Bulk tag deletion on repository ${repositoryId}: ${left.length} tags left (${left.join(', ')}).`);
    }
    const main = sandbox.state.protectedBranch(1, 'main');
    if (main) {
      const names = { 0: 'no access', 30: 'developer', 40: 'maintainer', 60: 'admin' };
      const levels = (entries) => entries.map((entry) => names[entry.access_level] ?? entry.access_level).join(' + ');
      console.log(
        `Protected branch main of acme/api: push ${levels(main.push_access_levels)}, merge ${levels(main.merge_access_levels)}.`,
      );
    }
    for (const file of listFiles(secrets)) {
      console.log(`Key file ${file.path.slice(secrets.length + 1)}: mode ${file.mode.toString(8)}`);
    }
    console.log(
      '\nNext: `npx forgewarden sandbox` in one terminal, then `npx forgewarden plan -c config/demo.yml` in another shows' +
        ' decisions without acting.',
    );
  }
  if (!onlyOnce && code === 0 && !stopping) code = await serveConsole(runCli);
  await sandbox.close();
  const removed = await removeKeys(redis.url, prefix);
  rmSync(secrets, { recursive: true, force: true });
  redis.stop();
  if (stopping)
    console.log(
      `\nDemo stopped: the daemon ${code === 0 ? 'stopped cleanly' : `exited ${code}`}, the sandbox is closed, and its ${removed} keys are gone from Redis.`,
    );
  process.exit(code);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});

/**
 * `npm run bench`: speed and memory of the daemon's hot paths, measured on this machine. Each figure is the median of
 * several runs; the README quotes them. Nothing here is a pass/fail test.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { INestApplicationContext } from '@nestjs/common';
import Redis from 'ioredis';
import { createApp } from '../src/bootstrap';
import { parseConfig } from '../src/config/load';
import { EngineService } from '../src/engine/engine.service';
import { AppLogger } from '../src/logging/logger';
import { GitlabClient } from '../src/gitlab';
import { POLICY_TYPES } from '../src/policies';
import { decideJobRetries, type JobRetryCandidate, type JobRetrySnapshot } from '../src/policies/job-retry/job-retry.decide';
import { jobRetryPolicy } from '../src/policies/job-retry/job-retry.schema';
import { ADMIN_TOKEN, baseWorld, manyJobs, manyTags } from '../test/support/world-builders';

async function median(runs: number, body: () => Promise<void> | void): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    await body();
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)];
}

const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);

async function configLoading(): Promise<string> {
  const policies = Array.from({ length: 50 }, (_, i) =>
    [
      `  - name: retry-${i}`,
      '    type: job_retry',
      `    projects: [acme/api-${i}, ${i + 1}]`,
      '    interval: 1m',
      '    match: { job_names: ["^test", "^e2e"], stages: [test], failure_log: ["(?i)connection reset", "ETIMEDOUT"] }',
    ].join('\n'),
  );
  const text = ['version: 1', 'gitlab: { url: "https://gitlab.example.com", token: "t0k3n-bench" }', 'policies:', ...policies].join('\n');
  const ms = await median(20, () => void parseConfig(text, 'bench.yml', { policyTypes: POLICY_TYPES, env: {} }));
  return `load and validate a policy file with 50 job_retry policies: ${ms.toFixed(1)} ms`;
}

async function deciding(): Promise<string> {
  const config = jobRetryPolicy.schema.parse({
    name: 'bench',
    type: 'job_retry',
    projects: ['acme/api'],
    interval: '1m',
    match: { job_names: ['^test'], failure_log: ['(?i)connection reset', 'ETIMEDOUT'] },
  });
  const log = `${'x'.repeat(60_000)}\nError: read ECONNRESET: connection reset by peer\n`;
  const candidates: JobRetryCandidate[] = Array.from({ length: 10_000 }, (_, i) => ({
    job: { id: i + 1, name: i % 3 ? 'test-unit' : 'lint', stage: 'test', ref: 'main', tag: false, allow_failure: false, pipeline_id: i, project_id: 1, finished_at: null },
    attempts: 1,
    newestAttemptId: i + 1,
    log: { state: 'found', text: log },
  }));
  const snapshot: JobRetrySnapshot = { projects: [{ project: 'acme/api', projectId: 1, candidates, watermark: undefined }] };
  const ms = await median(5, () => void decideJobRetries(config, snapshot, new Date()));
  return `decide 10,000 failed jobs, each with a 60 KB log searched by 2 RE2 patterns: ${ms.toFixed(0)} ms`;
}

/**
 * The forge is the sandbox command in a child process, so the heap figures are the client's alone: paging must not
 * grow with the number of jobs, and a log's tail must not cost the log's size.
 */
async function polling(): Promise<string[]> {
  const bigLog = `${'line of build output\n'.repeat(2_500_000)}ERROR: Job failed: connection reset\n`;
  const jobs = manyJobs(10_000, ['failed']).map((job, i) => ({ ...job, id: i + 1, ...(i === 9_999 ? { log: bigLog } : {}) }));
  const world = { ...baseWorld({ projects: [{ id: 1, path: 'api', namespace: 'acme', pipelines: [{ id: 1, ref: 'main', jobs }] }] }), now: undefined };
  const dir = mkdtempSync(join(tmpdir(), 'forgewarden-bench-'));
  const worldFile = join(dir, 'world.yml');
  writeFileSync(worldFile, JSON.stringify(world)); // JSON is YAML
  const port = await freePort();
  const sandbox = spawn(process.execPath, [join(__dirname, '../src/main.js'), 'sandbox', '--port', String(port), '--world', worldFile], { stdio: 'ignore' });
  const url = `http://127.0.0.1:${port}`;
  const client = new GitlabClient({ url, token: ADMIN_TOKEN, maxRequestsPerMinute: 0, minWriteIntervalMs: 0 });
  try {
    for (let i = 0; i < 200; i++) {
      const answered = await fetch(`${url}/api/v4/user`).then((r) => r.status, () => 0);
      if (answered === 401) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    global.gc?.();
    const before = process.memoryUsage().heapUsed;
    let peak = before;
    let count = 0;
    const started = performance.now();
    for await (const _job of client.jobs.all(1, { scope: ['failed'] })) {
      count++;
      if (count % 100 === 0) peak = Math.max(peak, process.memoryUsage().heapUsed);
    }
    const ms = performance.now() - started;
    const quiet = await median(20, async () => {
      for await (const job of client.jobs.all(1, { scope: ['failed'] }, { until: (j) => j.id <= 10_000 })) void job;
    });

    global.gc?.();
    const beforeTail = process.memoryUsage().heapUsed;
    let tailPeak = beforeTail;
    const sampler = setInterval(() => (tailPeak = Math.max(tailPeak, process.memoryUsage().heapUsed)), 5);
    const tailStarted = performance.now();
    const tail = await client.jobs.traceTail(1, 10_000, 64 * 1024);
    const tailMs = performance.now() - tailStarted;
    clearInterval(sampler);
    return [
      `stream all ${count.toLocaleString('en')} failed jobs of a project (${Math.ceil(count / 100)} pages of 100, sandbox in another process over loopback): ${ms.toFixed(0)} ms, client heap grew at most ${mb(peak - before)} MB`,
      `a poll with nothing new (stops on the first page): ${quiet.toFixed(1)} ms`,
      `keep the last 64 KiB of a ${mb(bigLog.length)} MB job log while streaming it: ${tailMs.toFixed(0)} ms, kept ${(tail.found ? tail.text.length : 0).toLocaleString('en')} characters, client heap grew at most ${mb(Math.max(0, tailPeak - beforeTail))} MB`,
    ];
  } finally {
    await client.close();
    sandbox.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The registry preview the issue asks to measure: a 10,000-tag repository, the forge answering each request 20 ms
 * late (a sandbox fault), through the real engine with Redis. Cold reads every tag's creation time; warm has them
 * cached from the cold pass.
 */
async function registryPreview(): Promise<string[]> {
  const tags = manyTags(10_000, { oldest: new Date(Date.now() - 40 * 86_400_000), stepMs: 5 * 60_000 });
  const world = {
    ...baseWorld({ projects: [{ id: 1, path: 'api', namespace: 'acme', registry: [{ id: 7, name: 'app', tags: [...tags, { name: 'latest', created_at: null }] }] }] }),
    now: undefined,
  };
  const dir = mkdtempSync(join(tmpdir(), 'forgewarden-bench-'));
  const worldFile = join(dir, 'world.yml');
  writeFileSync(worldFile, JSON.stringify(world));
  const port = await freePort();
  const sandbox = spawn(process.execPath, [join(__dirname, '../src/main.js'), 'sandbox', '--port', String(port), '--world', worldFile], { stdio: 'ignore' });
  const url = `http://127.0.0.1:${port}`;
  const prefix = `forgewarden-bench-${process.pid}`;
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  let app: INestApplicationContext | undefined;
  try {
    await waitForSandbox(url);
    await fetch(`${url}/__sandbox/faults`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ latency_ms: 20 }) });
    const config = parseConfig(
      [
        'version: 1',
        `gitlab: { url: "${url}", token: "${ADMIN_TOKEN}", concurrency: 8, max_requests_per_minute: 100000 }`,
        `redis: { url: "${redisUrl}", prefix: "${prefix}" }`,
        'policies:',
        '  - { name: cleanup, type: registry_cleanup, schedule: "0 3 * * *", projects: [1], name_regex_delete: ".*", keep_n: 50, older_than: 14d }',
      ].join('\n'),
      'bench.yml',
      { policyTypes: POLICY_TYPES, env: {} },
    );
    ({ app } = await createApp(config, 'bench.yml', new AppLogger({ level: 'error', stream: process.stderr }), { http: false }));
    const engine = app.get(EngineService);
    const measure = async (label: string) => {
      await fetch(`${url}/__sandbox/requests`, { method: 'DELETE' });
      const started = performance.now();
      const pass = await engine.runPass('cleanup', 'plan');
      const ms = performance.now() - started;
      const requests = ((await (await fetch(`${url}/__sandbox/requests`)).json()) as unknown[]).length;
      const reason = pass.decisions.find((decision) => decision.action !== 'skip')?.reason ?? pass.error ?? 'nothing';
      return `preview of a 10,000-tag repository, ${label}, the forge adding 20 ms a request: ${(ms / 1000).toFixed(1)} s, ${requests.toLocaleString('en')} requests (${reason})`;
    };
    return [await measure('cold'), await measure('warm (creation times cached)')];
  } finally {
    await app?.close();
    sandbox.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
    const redis = new Redis(redisUrl);
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  }
}

async function waitForSandbox(url: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if ((await fetch(`${url}/api/v4/user`).then((r) => r.status, () => 0)) === 401) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the sandbox at ${url} did not start`);
}

function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolvePort(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

async function main(): Promise<void> {
  console.log(`forgewarden benchmarks (node ${process.version}, ${process.platform}/${process.arch})`);
  for (const line of [await configLoading(), await deciding(), ...(await polling()), ...(await registryPreview())]) {
    console.log(`- ${line}`);
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});

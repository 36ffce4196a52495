import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { freePort } from './redis-server';
import { tempDir } from './temp';

/** The built command, run as a user runs it (`npm test` builds first). */
export const CLI = resolve(__dirname, '../../dist/main.js');

export interface CliResult {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Environment for a child: the test's own, minus anything that would change the command's behaviour. */
export function childEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, LOG_FORMAT: 'json', LOG_LEVEL: 'info', ...extra };
  for (const name of ['GITLAB_URL', 'GITLAB_TOKEN', 'FORGEWARDEN_CONFIG']) if (!(name in extra)) delete env[name];
  return env;
}

/** `text` as `name` in a temporary folder of its own, removed after the test file's tests. */
export function writeTempFile(name: string, text: string): string {
  const file = join(tempDir('test'), name);
  writeFileSync(file, text);
  return file;
}

/** A running `forgewarden` process. */
export class CliProcess {
  stdout = '';
  stderr = '';
  readonly exited: Promise<CliResult>;

  constructor(readonly child: ChildProcess) {
    child.stdout?.on('data', (chunk: Buffer) => (this.stdout += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (this.stderr += chunk.toString()));
    this.exited = new Promise((resolve) => {
      child.on('exit', (code, signal) => resolve({ code, signal, stdout: this.stdout, stderr: this.stderr }));
    });
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Sends `signal` and waits for the exit, killing the process if it does not exit within `timeoutMs`. */
  async stop(signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 20_000): Promise<CliResult> {
    if (this.running) this.child.kill(signal);
    const timer = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }
}

export function startCli(args: string[], env: NodeJS.ProcessEnv = childEnv()): CliProcess {
  return new CliProcess(spawn(process.execPath, [CLI, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] }));
}

/** Runs a command to its end (killing it after `timeoutMs`) and returns its exit code and output. */
export async function runCli(args: string[], env?: NodeJS.ProcessEnv, timeoutMs = 20_000): Promise<CliResult> {
  const process = startCli(args, env);
  const timer = setTimeout(() => process.child.kill('SIGKILL'), timeoutMs);
  try {
    return await process.exited;
  } finally {
    clearTimeout(timer);
  }
}

/** Polls `probe` until it answers true or `timeoutMs` passes. */
export async function waitUntil(
  what: string,
  probe: () => Promise<boolean> | boolean,
  timeoutMs = 15_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The status of GET `url`, or 0 when nothing answers. */
export async function statusOf(url: string): Promise<number> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(2_000) });
    await response.arrayBuffer();
    return response.status;
  } catch {
    return 0;
  }
}

/** `forgewarden sandbox` on a free port (the demo world unless `args` say otherwise), once it answers. */
export async function startSandboxCommand(args: string[] = []): Promise<{ process: CliProcess; url: string }> {
  const port = await freePort();
  const process = startCli(['sandbox', '--port', String(port), ...args], childEnv());
  const url = `http://127.0.0.1:${port}`;
  await waitUntil('the sandbox answers', async () => (await statusOf(`${url}/api/v4/user`)) === 401);
  return { process, url };
}

/**
 * Two job_retry policies over the demo world's acme/api and acme/web, as lines of a policy file after `policies:`:
 * the first matches the world's network failures, the second its full disks.
 */
export const DEMO_RETRY_POLICIES: readonly string[] = [
  '  - name: retry-network',
  '    type: job_retry',
  '    projects: [acme/api, acme/web]',
  '    interval: 5m',
  '    lookback: 2d',
  '    match: { stages: [test], failure_log: ["(?i)connection reset", "ETIMEDOUT"] }',
  '  - name: retry-full-disk',
  '    type: job_retry',
  '    projects: [acme/api, acme/web]',
  '    interval: 5m',
  '    lookback: 2d',
  '    match: { failure_log: ["(?i)no space left on device"] }',
];

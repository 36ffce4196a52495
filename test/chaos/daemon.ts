import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

/** `node --require clock-preload.js dist/main.js run -c FILE`, as a real child process with its output in a file. */

export const PRELOAD = resolve(__dirname, '../../../../test/chaos/clock-preload.js');

export interface DaemonEnvironment {
  mainJs: string;
  configFile: string;
  clockFile: string;
  forgeUrl: string;
  token: string;
  /** REDIS_URL, for a policy file that reads it (not with sentinels, which the file names). */
  redisUrl?: string;
  /** FORGEWARDEN_CHAOS_HTTP_PORT, for a policy file that serves /metrics there (policyFile's `metrics`). */
  httpPort?: number;
  logDir: string;
}

/** Every daemon process alive, so an interrupted suite (Ctrl-C, a CI timeout) leaves none behind. */
const live = new Set<Daemon>();

export async function killAllDaemons(): Promise<void> {
  await Promise.all([...live].map((daemon) => daemon.kill()));
}

/**
 * One replica slot. Each (re)start is a new process writing to a new log file (`<name>-<n>.log`), so a killed
 * process's last lines stay readable.
 */
export class Daemon {
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private starts = 0;
  private logFile = '';

  constructor(
    readonly name: string,
    private readonly env: DaemonEnvironment,
  ) {}

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** The log file of the current (or last) process. */
  get currentLog(): string {
    return this.logFile;
  }

  get startCount(): number {
    return this.starts;
  }

  start(): void {
    if (this.running) return;
    this.starts += 1;
    this.logFile = join(this.env.logDir, `${this.name}-${this.starts}.log`);
    const out = openSync(this.logFile, 'a');
    const child = spawn(process.execPath, ['--require', PRELOAD, this.env.mainJs, 'run', '-c', this.env.configFile], {
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: process.env.HOME ?? '/tmp',
        GITLAB_URL: this.env.forgeUrl,
        GITLAB_TOKEN: this.env.token,
        ...(this.env.redisUrl === undefined ? {} : { REDIS_URL: this.env.redisUrl }),
        ...(this.env.httpPort === undefined ? {} : { FORGEWARDEN_CHAOS_HTTP_PORT: String(this.env.httpPort) }),
        FORGEWARDEN_CHAOS_CLOCK_FILE: this.env.clockFile,
        LOG_FORMAT: 'json',
        LOG_LEVEL: 'debug',
      },
      stdio: ['ignore', out, out],
    });
    closeSync(out);
    this.child = child;
    live.add(this);
    this.exited = new Promise((done) =>
      child.once('exit', () => {
        live.delete(this);
        done();
      }),
    );
  }

  /** Resolves once the process said it started (its startup line), or after `timeoutMs`, or when it died. */
  async ready(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline && this.running) {
      if (existsSync(this.logFile) && readFileSync(this.logFile, 'utf8').includes('started with')) return true;
      await sleep(50);
    }
    return false;
  }

  /**
   * One counter or gauge of the running process's /metrics (summed over its label sets), or undefined when it serves
   * none, does not answer within `timeoutMs` or does not report the metric.
   */
  async metric(name: string, timeoutMs = 3_000): Promise<number | undefined> {
    if (this.env.httpPort === undefined || !this.running) return undefined;
    try {
      const response = await fetch(`http://127.0.0.1:${this.env.httpPort}/metrics`, {
        signal: AbortSignal.timeout(timeoutMs),
      });
      if (!response.ok) return undefined;
      let sum: number | undefined;
      for (const line of (await response.text()).split('\n')) {
        const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
        if (match?.[1] === name) sum = (sum ?? 0) + Number(match[3]);
      }
      return sum;
    } catch {
      return undefined;
    }
  }

  /** SIGKILL: no shutdown hook runs, as in a crash or an OOM kill. */
  async kill(): Promise<void> {
    if (!this.running) return;
    this.child?.kill('SIGKILL');
    // SIGKILL cannot be caught; the bound only keeps a stuck kernel from holding the suite.
    await Promise.race([this.exited, sleep(5_000)]);
  }

  /** SIGTERM and a bounded wait for the graceful shutdown, then SIGKILL. */
  async stop(timeoutMs: number): Promise<void> {
    if (!this.running) return;
    this.child?.kill('SIGTERM');
    const stopped = await Promise.race([this.exited.then(() => true), sleep(timeoutMs).then(() => false)]);
    if (!stopped) await this.kill();
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((done) => setTimeout(done, ms));
}

import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import Redis from 'ioredis';
import { childEnv, waitUntil } from '../support/cli';
import { freePort } from '../support/redis-server';

const DEMO = resolve(__dirname, '../../scripts/demo.js');

describe('npm run demo', () => {
  it('runs one acting pass against the sandbox, prints what it did and why, ends by printing the console address; Ctrl-C leaves no keys behind and exits 0', async () => {
    const redis = new Redis(process.env.REDIS_URL!);
    const port = await freePort();
    // As a user runs it: no LOG_LEVEL, so the daemon that serves the console logs only what goes wrong.
    const env = childEnv({ REDIS_URL: process.env.REDIS_URL, FORGEWARDEN_HTTP_PORT: String(port) });
    delete env.LOG_LEVEL;
    const child = spawn(process.execPath, [DEMO], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    const exited = new Promise<number | null>((done) => child.on('exit', done));
    // The demo's keys are under a prefix of its own process (another demo may run beside it, on the same Redis).
    const demoKeys = async () => (await redis.keys(`forgewarden-demo-${child.pid}:*`)).length;
    try {
      const address = `http://127.0.0.1:${port}/`;
      await waitUntil(
        'the demo prints its console address',
        () => stdout.includes(`Its console: ${address}`) || child.exitCode !== null,
        60_000,
      );
      expect(stdout.trimEnd().split('\n').at(-1)).toBe(
        `The daemon runs on. Its console: ${address}   (Ctrl-C stops the demo)`,
      );
      // The console shows the demo's policies with the results of their passes.
      const overview = await (await fetch(address)).text();
      for (const policy of [
        'retry-transient-failures',
        'nightly-image-cleanup',
        'staff-access',
        'branch-baseline',
        'ci-key-rotation',
      ]) {
        expect(overview).toContain(`<tr data-policy="${policy}">`);
      }
      expect(overview).toContain('<span class="outcome done">2 done</span>');
      child.kill('SIGINT');
      expect(await exited).toBe(0);
      expect(stdout).toMatch(/^retry-transient-failures \(job_retry, acting\): 4 skipped, 2 done$/m);
      expect(stdout).toMatch(
        /^done +retry +acme\/web job 2002 \(e2e-chrome\) +retry 1 of 2: log matched "ETIMEDOUT" +new job \d+$/m,
      );
      expect(stdout).toContain('2 of them job retries: projects/1/jobs/1002/retry, projects/2/jobs/2002/retry.');
      expect(stdout).toMatch(/^nightly-image-cleanup \(registry_cleanup, acting\): 1 done, 2 skipped$/m);
      expect(stdout).toMatch(
        /^done +bulk_delete +acme\/api \(repository 1\) +delete 9 of 20 tags +20 tags before, 9 planned/m,
      );
      expect(stdout).toMatch(/^staff-access \(access_requests, acting\): 2 skipped, 2 done$/m);
      expect(stdout).toMatch(
        /^done +approve +acme: carol \(user 3\) +approve as developer: rule 1 \(email domain acme\.com, two-factor on, not external\) +member at access level 30$/m,
      );
      expect(stdout).toMatch(/^done +deny +acme: spam-bot-42 \(user 5\) +deny: rule 2 \(username matches "\^spam"\)$/m);
      expect(stdout).toMatch(/^branch-baseline \(project_settings, acting\): 1 done$/m);
      expect(stdout).toMatch(
        /^done +reprotect_branch +acme\/api protected branch main +acme\/api: protected branch main: push_access_level developer → maintainer +reprotected main \(push maintainer, merge developer\)$/m,
      );
      expect(stdout).toContain('Protected branch main of acme/api: push maintainer, merge developer.');
      expect(stdout).toMatch(/^ci-key-rotation \(key_rotation, acting\): 7 done$/m);
      expect(stdout).toMatch(
        /^done +upload_key +root's SSH key 1 "root laptop" +upload the new public key, expiring in 180d +uploaded: key \d+ SHA256:\S+/m,
      );
      expect(stdout).toContain('Key file ci-key-rotation/root-1: mode 600');
      expect(stdout).toContain('Key file ci-key-rotation/acme_api-50: mode 600');
      expect(stdout).not.toContain('PRIVATE KEY');
      // What the forge left matches the policy's rules: latest, the keep regex, the newest 3 and the recent ones.
      expect(stdout).toContain(
        'Bulk tag deletion on repository 1: 11 tags left (build-0109, build-0110, latest, legacy-2019, main, mr-21, mr-22, nightly, v1.1.0, v1.2.2, v1.2.3).',
      );
      expect(await demoKeys()).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      await redis.quit();
    }
  });
});

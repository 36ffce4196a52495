import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  childEnv,
  runCli,
  startCli,
  startSandboxCommand,
  waitUntil,
  writeTempFile,
  type CliProcess,
} from '../support/cli';
import { dropKeys, freePort } from '../support/redis-server';

/**
 * The built daemon rotating its own token as an operator sets it up (docs/operations.md, "The daemon's own token"):
 * two personal access tokens of the bot's user in a token file, the first run learning and rotating the pair, the new
 * value in the file (0600) and in use, the gauges following, nothing in the log; `validate` refusing what cannot be
 * safe.
 */

const TOKEN_A = 'glpat-e2e-daemon-pair-a01';
const TOKEN_B = 'glpat-e2e-daemon-pair-b01';

describe('forgewarden run with a rotating token pair', () => {
  let sandbox: CliProcess;
  let sandboxUrl: string;
  let folder: string;
  const prefix = `e2e-own-token-${process.pid}`;

  beforeAll(async () => {
    const world = writeTempFile(
      'pair-world.yml',
      [
        'users:',
        '  - { username: root, admin: true, tokens: [glpat-sandbox-admin-token] }',
        '  - username: forgewarden',
        '    tokens:',
        `      - { token: ${TOKEN_A}, name: forgewarden-a, expires_at: now+20d }`,
        `      - { token: ${TOKEN_B}, name: forgewarden-b, expires_at: now+25d }`,
        '',
      ].join('\n'),
    );
    ({ process: sandbox, url: sandboxUrl } = await startSandboxCommand(['--world', world]));
    folder = mkdtempSync(join(tmpdir(), 'forgewarden-e2e-own-token-'));
  });

  afterAll(async () => {
    await sandbox.stop();
    rmSync(folder, { recursive: true, force: true });
    await dropKeys(prefix);
  });

  it('rotates the spare at start, writes the new value 0600 first and authenticates with it, without a family revocation', async () => {
    const tokenFile = join(folder, 'token');
    writeFileSync(tokenFile, `${TOKEN_A}\n${TOKEN_B}\n`, { mode: 0o600 });
    const httpPort = await freePort();
    const config = writeTempFile(
      'rotating.yml',
      [
        'version: 1',
        `gitlab: { url: "${sandboxUrl}", token_file: ${tokenFile}, token_rotation: { before_expiry: 30d, lifetime: 90d } }`,
        `redis: { prefix: ${prefix} }`,
        `http: { port: ${httpPort} }`,
        'policies: []',
        '',
      ].join('\n'),
    );
    const env = childEnv({ REDIS_URL: process.env.REDIS_URL, GITLAB_TOKEN: 'glpat-ignored-with-a-token-file' });
    expect(await runCli(['validate', '-c', config], env)).toMatchObject({ code: 0 });

    const daemon = startCli(['run', '-c', config], env);
    const metrics = async () => (await fetch(`http://127.0.0.1:${httpPort}/metrics`)).text().catch(() => '');
    try {
      await waitUntil(
        'the pair is rotated',
        () =>
          readFileSync(tokenFile, 'utf8').startsWith('{') && JSON.parse(readFileSync(tokenFile, 'utf8')).active === 1,
        30_000,
      );
      const state = JSON.parse(readFileSync(tokenFile, 'utf8')) as {
        tokens: { id: number; value: string; name: string; expires_at: string }[];
        pending: unknown;
      };
      expect(statSync(tokenFile).mode & 0o777).toBe(0o600);
      expect(state.pending).toBeNull();
      expect(state.tokens.map((t) => t.name)).toEqual(['forgewarden-a', 'forgewarden-b']);
      const fresh = state.tokens[1];
      expect(fresh.value).not.toBe(TOKEN_B);

      // The new token answers for the bot, and the daemon's gauges follow the file.
      const me = await fetch(`${sandboxUrl}/api/v4/personal_access_tokens/self`, {
        headers: { 'PRIVATE-TOKEN': fresh.value },
      });
      expect(((await me.json()) as { id: number; expires_at: string }).id).toBe(fresh.id);
      await waitUntil(
        'the gauges are exported',
        async () => /forgewarden_token_expires_at_seconds\{token="spare"\}/.test(await metrics()),
        30_000,
      );
      const text = await metrics();
      expect(text).toMatch(/^forgewarden_token_rotation_pending 0$/m);
      expect(text).toContain(
        `forgewarden_token_expires_at_seconds{token="spare"} ${Date.parse(`${state.tokens[0].expires_at}T00:00:00Z`) / 1000}`,
      );
      expect(await (await fetch(`${sandboxUrl}/__sandbox/token-family-revocations`)).json()).toEqual([]);
    } finally {
      const stopped = await daemon.stop('SIGTERM');
      expect(stopped.code).toBe(0);
      // Nothing the daemon logged holds a token value.
      for (const value of [
        TOKEN_A,
        TOKEN_B,
        ...(JSON.parse(readFileSync(tokenFile, 'utf8')) as { tokens: { value: string }[] }).tokens.map((t) => t.value),
      ]) {
        expect(`${stopped.stdout}${stopped.stderr}`).not.toContain(value);
      }
      expect(stopped.stdout).toMatch(/rotated token \d+ into token \d+, expiring \d{4}-\d{2}-\d{2}/);
    }
  }, 90_000);

  it('refuses in validate what cannot be safe: several replicas without a shared file, a token given besides', async () => {
    const config = writeTempFile(
      'unsafe.yml',
      ['version: 1', `gitlab: { url: "${sandboxUrl}", token: glpat-x, token_rotation: { replicas: 2 } }`, ''].join(
        '\n',
      ),
    );
    const result = await runCli(['validate', '-c', config], childEnv());
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`${config}:2:`);
    expect(result.stderr).toContain('gitlab.token_rotation: rotation writes each new value into gitlab.token_file');
    expect(result.stderr).toContain(
      'gitlab.token_rotation.shared_file: missing: 2 replicas rotate one token: each must read the same token file',
    );
  });
});

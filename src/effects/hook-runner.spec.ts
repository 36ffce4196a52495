import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HookRunner } from './hook-runner';

describe('HookRunner', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'hook-runner-spec-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('runs the command by /bin/sh with the facts in its environment', async () => {
    const out = join(dir, 'out');
    expect(
      await new HookRunner(60_000).run(`printf '%s %s' "$KEY_ID" "$HOME" > ${out}`, [], { KEY_ID: '51' }),
    ).toBeUndefined();
    expect(readFileSync(out, 'utf8')).toBe(`51 ${process.env.HOME ?? ''}`);
  });

  it('says how the command failed: its exit code, or that it ran too long', async () => {
    expect(await new HookRunner(60_000).run('exit 3', [], {})).toBe('exited with code 3');
    // Killed long before it could end by itself, however slow the machine.
    expect(await new HookRunner(100).run('exec sleep 60', [], {})).toBe('timed out after 0.1s');
  });

  it('hands a secret on standard input only: neither argv nor the environment holds it', async () => {
    const out = join(dir, 'out');
    const command = `{ cat; printf ' %s' "$(env | grep -c glpat- || true)"; } > ${out}`;
    expect(await new HookRunner(60_000).run(command, [], { TOKEN_ID: '7' }, 'glpat-secret-value')).toBeUndefined();
    expect(readFileSync(out, 'utf8')).toBe('glpat-secret-value 0');
  });
});

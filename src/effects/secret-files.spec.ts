import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SecretFiles } from './secret-files';

const files = new SecretFiles();

/** What each file looked like when its final mode was about to be set; chmod itself still happens. */
const beforeChmod: Array<{ file: string; content: string; mode: number }> = [];
jest.mock('node:fs/promises', () => {
  const actual = jest.requireActual<typeof import('node:fs/promises')>('node:fs/promises');
  return {
    ...actual,
    chmod: async (file: string, mode: number) => {
      beforeChmod.push({
        file,
        content: await actual.readFile(file, 'utf8'),
        mode: (await actual.stat(file)).mode & 0o777,
      });
      return actual.chmod(file, mode);
    },
  };
});

describe('SecretFiles.write', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'secret-file-spec-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const modeOf = (path: string) => statSync(path).mode & 0o777;

  it('writes a new file with mode 0600 and leaves no temporary file behind', async () => {
    const path = join(dir, 'key');
    await files.write(path, 'secret\n', 0o600);
    expect(readFileSync(path, 'utf8')).toBe('secret\n');
    expect(modeOf(path)).toBe(0o600);
    expect(readdirSync(dir)).toEqual(['key']);
  });

  it('replaces an existing file of mode 0644 with one of mode 0600, which writeFile alone would not', async () => {
    const path = join(dir, 'key');
    writeFileSync(path, 'old', { mode: 0o644 });
    expect(modeOf(path)).toBe(0o644);
    await files.write(path, 'new', 0o600);
    expect(readFileSync(path, 'utf8')).toBe('new');
    expect(modeOf(path)).toBe(0o600);
    expect(readdirSync(dir)).toEqual(['key']);
  });

  it('keeps the secret in a file of mode 0600 from its first byte, before the file gets its final mode', async () => {
    const path = join(dir, 'key.pub');
    beforeChmod.length = 0;
    // With no umask the mode given at creation is the mode the file gets: a umask of 077 would hide a wider one.
    const umask = process.umask(0);
    try {
      // Asked for 0644 in the end (a public key): still 0600 while it is written.
      await files.write(path, 'secret\n', 0o644);
    } finally {
      process.umask(umask);
    }
    expect(beforeChmod).toEqual([{ file: expect.stringContaining(dir), content: 'secret\n', mode: 0o600 }]);
    expect(beforeChmod[0]?.file).not.toBe(path);
    expect(await readFile(path, 'utf8')).toBe('secret\n');
    expect(modeOf(path)).toBe(0o644);
  });

  it('gives a public key 0644 when asked', async () => {
    const path = join(dir, 'key.pub');
    await files.write(path, 'ssh-ed25519 AAAA', 0o644);
    expect(modeOf(path)).toBe(0o644);
  });

  it('fails without touching anything when the directory is missing', async () => {
    await expect(files.write(join(dir, 'missing', 'key'), 'x', 0o600)).rejects.toThrow(/ENOENT/);
    expect(readdirSync(dir)).toEqual([]);
  });
});

describe('SecretFiles.unusable', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'secret-dir-spec-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('accepts a writable directory and names the problem of anything else', async () => {
    expect(await files.unusable(dir)).toBeUndefined();
    expect(await files.unusable(join(dir, 'nope'))).toBe(`secrets_dir ${join(dir, 'nope')} does not exist`);
    writeFileSync(join(dir, 'file'), '');
    expect(await files.unusable(join(dir, 'file'))).toBe(`secrets_dir ${join(dir, 'file')} is not a directory`);
  });
});

describe('SecretFiles: reading, moving aside, the private folder', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'secret-files-spec-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('reads a file, and answers undefined for one that is not there', async () => {
    writeFileSync(join(dir, 'key'), 'secret\n');
    expect(await files.read(join(dir, 'key'))).toBe('secret\n');
    expect(await files.read(join(dir, 'none'))).toBeUndefined();
    await expect(files.read(dir)).rejects.toThrow(/EISDIR/);
  });

  it('moves a file, and says when there was none to move', async () => {
    writeFileSync(join(dir, 'key'), 'secret');
    expect(await files.move(join(dir, 'key'), join(dir, 'key.closed'))).toBe(true);
    expect(readdirSync(dir)).toEqual(['key.closed']);
    expect(await files.move(join(dir, 'key'), join(dir, 'other'))).toBe(false);
    expect(readdirSync(dir)).toEqual(['key.closed']);
  });

  it('makes the folder and its parents readable by the daemon only', async () => {
    await files.makePrivateFolder(join(dir, 'policy', 'keys'));
    expect(statSync(join(dir, 'policy')).mode & 0o777).toBe(0o700);
    expect(statSync(join(dir, 'policy', 'keys')).mode & 0o777).toBe(0o700);
  });
});

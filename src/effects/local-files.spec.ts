import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalFiles } from './local-files';

const files = new LocalFiles();
let folder: string;

beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'forgewarden-local-files-'));
});

afterEach(async () => {
  await rm(folder, { recursive: true, force: true });
});

describe('LocalFiles: absence is an answer only for a path that does not exist', () => {
  it('says what is at a path, and nothing for a path that does not exist', async () => {
    await writeFile(join(folder, 'a.txt'), 'four');
    await mkdir(join(folder, 'sub'));

    expect(await files.stat(join(folder, 'a.txt'))).toEqual({ size: 4, isFile: true, isFolder: false });
    expect(await files.stat(join(folder, 'sub'))).toMatchObject({ isFile: false, isFolder: true });
    expect(await files.stat(join(folder, 'missing'))).toBeUndefined();
    expect(await files.exists(join(folder, 'a.txt'))).toBe(true);
    expect(await files.exists(join(folder, 'sub'))).toBe(true);
    expect(await files.exists(join(folder, 'missing'))).toBe(false);
  });

  it('throws for a path that cannot be looked at, rather than taking it for one that is not there', async () => {
    await writeFile(join(folder, 'a.txt'), 'four');
    // A file where a folder should be: ENOTDIR, which is not absence.
    await expect(files.stat(join(folder, 'a.txt', 'inner'))).rejects.toMatchObject({ code: 'ENOTDIR' });
    await expect(files.exists(join(folder, 'a.txt', 'inner'))).rejects.toMatchObject({ code: 'ENOTDIR' });
    await expect(files.readText(join(folder, 'a.txt', 'inner'))).rejects.toMatchObject({ code: 'ENOTDIR' });
    await expect(files.list(join(folder, 'a.txt'))).rejects.toMatchObject({ code: 'ENOTDIR' });
  });

  it('reads a file as text, and nothing for a file that does not exist', async () => {
    await writeFile(join(folder, 'a.json'), '{"é":1}');

    expect(await files.readText(join(folder, 'a.json'))).toBe('{"é":1}');
    expect(await files.readText(join(folder, 'missing.json'))).toBeUndefined();
  });

  it('streams a file, and fails the stream for one that does not exist', async () => {
    await writeFile(join(folder, 'a.bin'), Buffer.from([1, 2, 3]));
    const chunks: Buffer[] = [];
    for await (const chunk of files.readStream(join(folder, 'a.bin'))) chunks.push(chunk as Buffer);

    expect(Buffer.concat(chunks)).toEqual(Buffer.from([1, 2, 3]));
    await expect(readAll(files.readStream(join(folder, 'missing.bin')))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('lists a folder sorted by name, saying which are folders; a folder that does not exist holds nothing', async () => {
    await writeFile(join(folder, 'b.txt'), '');
    await writeFile(join(folder, '.a.partial'), '');
    await mkdir(join(folder, 'a'));

    expect(await files.list(folder)).toEqual([
      { name: '.a.partial', isFolder: false },
      { name: 'a', isFolder: true },
      { name: 'b.txt', isFolder: false },
    ]);
    expect(await files.list(join(folder, 'missing'))).toEqual([]);
  });
});

describe('LocalFiles: writes', () => {
  it('creates folders with their parents, and with the mode asked for', async () => {
    await files.makeFolder(join(folder, 'a', 'b'), 0o750);
    await files.makeFolder(join(folder, 'a', 'b'), 0o750);

    expect((await stat(join(folder, 'a', 'b'))).isDirectory()).toBe(true);
    expect((await stat(join(folder, 'a', 'b'))).mode & 0o777).toBe(0o750 & ~process.umask());
  });

  it('writes a new file with its mode, and empties an old one before writing', async () => {
    await files.writeFlushed(join(folder, 'secret'), 'a long first text', 0o600);
    await files.writeFlushed(join(folder, 'secret'), 'short', 0o600);

    expect(await readFile(join(folder, 'secret'), 'utf8')).toBe('short');
    expect((await stat(join(folder, 'secret'))).mode & 0o777).toBe(0o600);
  });

  it('renames, flushes, and removes files and folders; one already gone is fine', async () => {
    await writeFile(join(folder, 'a.partial'), 'done');
    await files.flush(join(folder, 'a.partial'));
    await files.rename(join(folder, 'a.partial'), join(folder, 'a'));
    await files.flushFolder(folder);
    expect(await readFile(join(folder, 'a'), 'utf8')).toBe('done');

    await files.makeFolder(join(folder, 'set', 'projects'), 0o750);
    await writeFile(join(folder, 'set', 'projects', 'api.tar.gz'), 'x');
    await files.remove(join(folder, 'set'));
    await files.remove(join(folder, 'a'));
    await files.remove(join(folder, 'never-there'));

    expect(await files.list(folder)).toEqual([]);
  });

  it('lets a folder that cannot be flushed be: the rename in it has happened', async () => {
    await expect(files.flushFolder(join(folder, 'missing'))).resolves.toBeUndefined();
    await expect(files.flush(join(folder, 'missing'))).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

async function readAll(stream: AsyncIterable<unknown>): Promise<void> {
  for await (const _chunk of stream) {
    // Read to the end (or the error).
  }
}

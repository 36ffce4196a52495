import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TokenFile, TokenFileError, type TokenFileState } from './token-file';

describe('TokenFile', () => {
  let folder: string;
  let path: string;
  beforeEach(() => {
    folder = mkdtempSync(join(tmpdir(), 'token-file-'));
    path = join(folder, 'token');
  });
  afterEach(() => rmSync(folder, { recursive: true, force: true }));

  const write = (text: string, mode = 0o600) => {
    writeFileSync(path, text);
    chmodSync(path, mode);
  };
  const problem = (): string => {
    try {
      new TokenFile(path).readSync();
    } catch (error) {
      if (error instanceof TokenFileError) return error.message;
      throw error;
    }
    throw new Error('expected the file to be refused');
  };

  it('reads one token, or the two of a pair, one a line as an operator writes them', async () => {
    write('# the pair of the forgewarden user\nglpat-aaaa\n\n  glpat-bbbb  \n');
    const state = await new TokenFile(path).read();
    expect(state).toEqual({
      version: 1,
      generation: 0,
      active: 0,
      pending: null,
      tokens: ['glpat-aaaa', 'glpat-bbbb'].map((value) => ({
        id: null,
        value,
        name: null,
        expires_at: null,
        retired_at: null,
        retired_generation: null,
        lost: null,
      })),
    });
    write('glpat-only\n');
    expect(new TokenFile(path).readSync().tokens.map((t) => t.value)).toEqual(['glpat-only']);
  });

  it('writes its own JSON with mode 0600, atomically, and reads it back', async () => {
    write('glpat-aaaa\nglpat-bbbb\n', 0o644);
    // An existing file's mode is not what a write keeps: the new file is the daemon's alone.
    chmodSync(path, 0o600);
    const file = new TokenFile(path);
    const state: TokenFileState = {
      ...(await file.read()),
      generation: 4,
      active: 1,
      pending: { slot: 0, id: 7, sent_at: '2025-06-02T12:00:00.000Z' },
    };
    chmodSync(path, 0o644);
    await file.write(state);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(await file.read()).toEqual(state);
    expect(readFileSync(path, 'utf8')).toMatch(/^\{\n {2}"version": 1,/);
    expect(readdirSync(folder)).toEqual(['token']);
  });

  it('refuses a file others may read, an empty one, too many lines, and a JSON that is not its own, naming the file', () => {
    write('glpat-aaaa\n', 0o640);
    expect(problem()).toBe(`token file ${path} may be read by other users (mode 640): chmod 600 ${path}`);
    write('\n# nothing\n');
    expect(problem()).toBe(`token file ${path} holds no token`);
    write('a\nb\nc\n');
    expect(problem()).toBe(`token file ${path} holds 3 lines: one token, or the two tokens of a rotating pair`);
    write('glpat aaaa\n');
    expect(problem()).toBe(`token file ${path}: a token is one word on its own line`);
    write('{"version": 1, "generation": 0, "active": 3, "tokens": [], "pending": null}');
    expect(problem()).toMatch(new RegExp(`^token file ${path}: tokens: `));
    write('{ not json');
    expect(problem()).toMatch(new RegExp(`^token file ${path} is not valid JSON`));
    rmSync(path);
    expect(problem()).toBe(`cannot read the token file ${path}: no such file`);
  });
});

import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { pack } from 'tar-stream';
import { LocalFiles } from '../../effects/local-files';
import {
  type ArchiveProblem,
  ArchiveInvalidError,
  sha256File,
  verifyArchive,
  verifyNdjsonGz,
} from './group-backup.archive';

/** The disk as the policy sees it: the tests read and write through the same class. */
const files = new LocalFiles();

interface TarEntry {
  readonly name: string;
  readonly content?: string | Buffer;
  readonly type?: 'file' | 'directory';
}

/** A real tar, written by tar-stream (ending with its two zero blocks). */
async function tarOf(entries: readonly TarEntry[]): Promise<Buffer> {
  const tar = pack();
  for (const entry of entries) {
    if (entry.type === 'directory') tar.entry({ name: entry.name, type: 'directory' });
    else tar.entry({ name: entry.name }, entry.content ?? '');
  }
  tar.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of tar) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

const TWO_ENTRIES: TarEntry[] = [
  { name: 'VERSION', content: '0.2.4' },
  { name: 'tree/groups/1.json', content: JSON.stringify({ name: 'platform', path: 'platform' }) },
];

let folder: string;
let written = 0;

/** Writes `bytes` to a new file in the test folder and returns its path. */
async function fileWith(bytes: Buffer | string): Promise<string> {
  written += 1;
  const path = join(folder, `file-${written}`);
  await writeFile(path, bytes);
  return path;
}

async function expectProblem(check: Promise<unknown>, problem: ArchiveProblem): Promise<void> {
  const error: unknown = await check.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(ArchiveInvalidError);
  expect(error).toMatchObject({ problem });
  expect((error as Error).message).toContain(problem);
}

function sha256Of(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}

beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), 'forgewarden-archive-'));
});

afterAll(async () => {
  await rm(folder, { recursive: true, force: true });
});

describe('verifyArchive', () => {
  it('accepts a tar.gz with 2 entries: its size and SHA-256 are those of the file on disk', async () => {
    const path = await fileWith(gzipSync(await tarOf(TWO_ENTRIES)));
    const onDisk = await readFile(path);

    await expect(verifyArchive(files, path)).resolves.toEqual({
      bytes: onDisk.length,
      sha256: sha256Of(onDisk),
      entries: 2,
    });
    await expect(sha256File(files, path)).resolves.toEqual({ bytes: onDisk.length, sha256: sha256Of(onDisk) });
  });

  it('streams an archive larger than one read, with entries of several sizes', async () => {
    // Random content does not compress: the file is read in many chunks, and the tar walked across them.
    const big = randomBytes(3 * 1024 * 1024 + 17);
    const path = await fileWith(
      gzipSync(
        await tarOf([
          { name: 'big.bin', content: big },
          { name: 'empty' },
          { name: 'exactly-one-block', content: 'x'.repeat(512) },
        ]),
      ),
    );
    const onDisk = await readFile(path);

    await expect(verifyArchive(files, path)).resolves.toEqual({
      bytes: onDisk.length,
      sha256: sha256Of(onDisk),
      entries: 3,
    });
  });

  it('walks pax headers (a long name) and directories', async () => {
    const path = await fileWith(
      gzipSync(
        await tarOf([
          { name: 'tree', type: 'directory' },
          { name: `tree/${'n'.repeat(180)}.json`, content: '{}' },
        ]),
      ),
    );

    await expect(verifyArchive(files, path)).resolves.toMatchObject({ entries: 2 });
  });

  it('accepts padding after the end-of-archive marker, as GNU tar writes to fill a record', async () => {
    const path = await fileWith(gzipSync(Buffer.concat([await tarOf(TWO_ENTRIES), Buffer.alloc(8 * 512)])));

    await expect(verifyArchive(files, path)).resolves.toMatchObject({ entries: 2 });
  });

  it.each<[string, () => Promise<Buffer>, ArchiveProblem]>([
    ['an empty file', async () => Buffer.alloc(0), 'empty file'],
    ['a text file', async () => Buffer.from('<html>502 Bad Gateway</html>\n'), 'not gzip'],
    ['an uncompressed tar', () => tarOf(TWO_ENTRIES), 'not gzip'],
    ['a lone first gzip byte', async () => Buffer.from([0x1f]), 'truncated'],
    ['a gzip of random bytes', async () => gzipSync(randomBytes(4096)), 'not a tar archive'],
    ['a valid tar.gz with no entries', async () => gzipSync(await tarOf([])), 'no tar entries'],
    ['a gzip of nothing', async () => gzipSync(Buffer.alloc(0)), 'no tar entries'],
    ['a valid archive cut in half', async () => halfOf(gzipSync(await tarOf(TWO_ENTRIES))), 'truncated'],
    // Cut while an entry's data is being read: the entry's stream fails too, which must not escape as an uncaught error.
    [
      'a large archive cut inside an entry',
      async () => halfOf(gzipSync(await tarOf([{ name: 'big.bin', content: randomBytes(2 * 1024 * 1024) }]))),
      'truncated',
    ],
    [
      'a valid archive without its 8-byte gzip trailer',
      async () => withoutLast(gzipSync(await tarOf(TWO_ENTRIES)), 8),
      'truncated',
    ],
    [
      'a valid archive without its last byte',
      async () => withoutLast(gzipSync(await tarOf(TWO_ENTRIES)), 1),
      'truncated',
    ],
    [
      'a tar cut after an entry, its gzip complete',
      async () => gzipSync(withoutLast(await tarOf(TWO_ENTRIES), 1024)),
      'truncated',
    ],
    [
      'a tar with one of its two end blocks, its gzip complete',
      async () => gzipSync(withoutLast(await tarOf(TWO_ENTRIES), 512)),
      'truncated',
    ],
    [
      'a tar cut inside an entry, its gzip complete',
      async () => gzipSync(withoutLast(await tarOf(TWO_ENTRIES), 1024 + 300)),
      'truncated',
    ],
    [
      'a gzip whose CRC does not match',
      async () => withByteFlipped(gzipSync(await tarOf(TWO_ENTRIES)), -8),
      'corrupt gzip',
    ],
  ])('rejects %s', async (_title, bytes, problem) => {
    await expectProblem(verifyArchive(files, await fileWith(await bytes())), problem);
  });

  it('rejects every shorter prefix of a valid archive: a download can stop at any byte', async () => {
    const whole = gzipSync(await tarOf(TWO_ENTRIES));
    const problems = new Set<string>();
    for (let length = 1; length < whole.length; length += 1) {
      const error: unknown = await verifyArchive(files, await fileWith(whole.subarray(0, length))).catch(
        (reason: unknown) => reason,
      );
      problems.add(error instanceof ArchiveInvalidError ? error.problem : `not rejected at ${length} bytes`);
    }
    expect([...problems]).toEqual(['truncated']);
  });

  it('lets a file that cannot be read fail as it does, not as an invalid archive', async () => {
    await expect(verifyArchive(files, join(folder, 'missing.tar.gz'))).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

describe('verifyNdjsonGz', () => {
  const LINES = ['{"id":1,"title":"a"}', '{"id":2,"title":"b"}', '[1,2,3]'];

  it.each<[string, string, number]>([
    ['lines ending with a newline', `${LINES.join('\n')}\n`, 3],
    ['a last line without its newline', LINES.join('\n'), 3],
    ['CRLF line ends', `${LINES.join('\r\n')}\r\n`, 3],
    ['one JSON value of another kind per line', '"text"\n42\nnull\ntrue\n', 4],
    ['no lines at all (a relation with no records)', '', 0],
  ])('accepts %s, counting lines', async (_title, text, lines) => {
    const path = await fileWith(gzipSync(Buffer.from(text)));
    const onDisk = await readFile(path);

    await expect(verifyNdjsonGz(files, path)).resolves.toEqual({
      bytes: onDisk.length,
      sha256: sha256Of(onDisk),
      entries: lines,
    });
  });

  it('accepts lines longer than a read, with multi-byte characters split between reads', async () => {
    const long = JSON.stringify({ description: 'é🦊'.repeat(200_000) });
    const path = await fileWith(gzipSync(Buffer.from(`${long}\n{"id":2}\n${long}\n`)));

    await expect(verifyNdjsonGz(files, path)).resolves.toMatchObject({ entries: 3 });
  });

  it.each<[string, () => Buffer, ArchiveProblem, string]>([
    ['a line that is not JSON', () => gzipSync(Buffer.from('{"id":1}\n{"id":\n')), 'not ndjson', 'line 2 is not JSON'],
    [
      'an empty line between others',
      () => gzipSync(Buffer.from('{"id":1}\n\n{"id":3}\n')),
      'not ndjson',
      'line 2 is empty',
    ],
    [
      'bytes that are not UTF-8',
      () => gzipSync(Buffer.from([0x7b, 0x7d, 0x0a, 0x22, 0xff, 0x22, 0x0a])),
      'not ndjson',
      'not UTF-8',
    ],
    ['an empty file', () => Buffer.alloc(0), 'empty file', ''],
    ['a plain NDJSON file', () => Buffer.from('{"id":1}\n'), 'not gzip', ''],
    ['a gzip cut in half', () => halfOf(gzipSync(Buffer.from(`${LINES.join('\n')}\n`.repeat(50)))), 'truncated', ''],
    [
      'a gzip without its trailer',
      () => withoutLast(gzipSync(Buffer.from(`${LINES.join('\n')}\n`)), 8),
      'truncated',
      '',
    ],
  ])('rejects %s', async (_title, bytes, problem, detail) => {
    const check = verifyNdjsonGz(files, await fileWith(bytes()));
    await expectProblem(check, problem);
    await expect(check).rejects.toThrow(detail);
  });
});

describe('sha256File', () => {
  it.each<[string, Buffer]>([
    ['an empty file', Buffer.alloc(0)],
    ['a small file', Buffer.from('forgewarden')],
    ['a file larger than one read', randomBytes(1024 * 1024 + 3)],
  ])('hashes %s as node:crypto does', async (_title, bytes) => {
    await expect(sha256File(files, await fileWith(bytes))).resolves.toEqual({
      bytes: bytes.length,
      sha256: sha256Of(bytes),
    });
  });
});

function halfOf(bytes: Buffer): Buffer {
  return bytes.subarray(0, Math.floor(bytes.length / 2));
}

function withoutLast(bytes: Buffer, count: number): Buffer {
  return bytes.subarray(0, bytes.length - count);
}

/** A copy with the byte at `index` (negative: from the end) inverted. */
function withByteFlipped(bytes: Buffer, index: number): Buffer {
  const copy = Buffer.from(bytes);
  const at = index < 0 ? copy.length + index : index;
  copy[at] = copy[at] ^ 0xff;
  return copy;
}

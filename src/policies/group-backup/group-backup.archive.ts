import { createHash } from 'node:crypto';
import { Transform, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { extract } from 'tar-stream';
import type { LocalFiles } from '../../effects/local-files';

/**
 * Checks of a downloaded backup on disk, in one streaming pass (a group export may be gigabytes, so nothing is ever
 * read whole into memory): the size and SHA-256 of the bytes on disk, computed as they are read, and that those bytes
 * are what they claim to be — a gzip-compressed tar that ends properly, or gzip-compressed NDJSON.
 */

export interface ArchiveCheck {
  /** Size of the file on disk (the compressed bytes). */
  readonly bytes: number;
  /** SHA-256 of the file on disk, lowercase hex. */
  readonly sha256: string;
  /** Tar entries, or NDJSON lines. */
  readonly entries: number;
}

/** What is wrong with a file that is not a complete archive of the kind expected. */
export type ArchiveProblem =
  'empty file' | 'not gzip' | 'truncated' | 'corrupt gzip' | 'not a tar archive' | 'no tar entries' | 'not ndjson';

/** The file is not a complete archive of the kind expected; `problem` (and the message) say what is wrong. */
export class ArchiveInvalidError extends Error {
  readonly path: string;
  readonly problem: ArchiveProblem;
  readonly detail: string | undefined;

  constructor(path: string, problem: ArchiveProblem, detail?: string) {
    super(`${path}: ${problem}${detail ? ` (${detail})` : ''}`);
    this.name = 'ArchiveInvalidError';
    this.path = path;
    this.problem = problem;
    this.detail = detail;
  }

  /** What is wrong, without the path: for a message that names the file in its own words. */
  get reason(): string {
    return `${this.problem}${this.detail ? ` (${this.detail})` : ''}`;
  }
}

const TAR_BLOCK = 512;
/** A tar ends with two zero blocks (POSIX); writers may pad further, to a whole record. */
const TAR_END_MARKER = 2 * TAR_BLOCK;
const GZIP_MAGIC = [0x1f, 0x8b];

/**
 * Reads the file once: gunzips it and walks its tar structure; throws ArchiveInvalidError naming what is wrong
 * ("empty file", "not gzip", "truncated", "corrupt gzip", "not a tar archive", "no tar entries").
 */
export async function verifyArchive(files: LocalFiles, path: string): Promise<ArchiveCheck> {
  const compressed = measureCompressed(path);
  const tarBytes = countBytes();
  const tar = extract();
  let tarError: unknown;
  tar.on('error', (error) => (tarError = error));
  let entries = 0;
  // Where the last entry's data ends in the tar stream: everything after it must be the end-of-archive marker.
  let endOfEntries = 0;
  tar.on('entry', (header, stream, next) => {
    entries += 1;
    // Like tar-stream itself, a directory's size is ignored: no data follows its header.
    const dataBytes = header.type === 'directory' ? 0 : header.size;
    endOfEntries = Math.max(endOfEntries, stream.offset + TAR_BLOCK + Math.ceil(dataBytes / TAR_BLOCK) * TAR_BLOCK);
    stream.on('end', () => next());
    // When the archive breaks off inside this entry, the entry's stream is destroyed with the same error the pipeline
    // rejects with; unheard here, it would be an uncaught 'error' event and bring the whole process down.
    stream.on('error', () => undefined);
    stream.resume();
  });
  try {
    await pipeline(files.readStream(path), compressed.stream, createGunzip(), tarBytes.stream, tar);
  } catch (error) {
    const problem = asGzipProblem(path, error);
    // The pipeline also destroys the tar stream with another stage's error (ours, or one with a code, from zlib or the
    // file system): only an error without a code is tar-stream's own.
    if (
      problem === error &&
      error === tarError &&
      error instanceof Error &&
      !(error instanceof ArchiveInvalidError) &&
      !('code' in error)
    ) {
      // tar-stream's only way of saying the data stopped inside a header or an entry.
      if (/unexpected end of data/i.test(error.message))
        throw new ArchiveInvalidError(path, 'truncated', 'the tar stops inside an entry');
      // Its other words ("Maybe ... it needs to be gunzipped?") would mislead: the data was gunzipped already.
      throw new ArchiveInvalidError(
        path,
        'not a tar archive',
        /invalid tar header/i.test(error.message) ? 'a block where a tar header belongs is not one' : error.message,
      );
    }
    throw problem;
  }
  if (entries === 0) throw new ArchiveInvalidError(path, 'no tar entries');
  // tar-stream accepts a tar that stops right after an entry; a download cut there (its gzip closed properly by
  // whoever wrote it) would otherwise pass as complete with entries missing.
  if (tarBytes.count() - endOfEntries < TAR_END_MARKER) {
    throw new ArchiveInvalidError(path, 'truncated', 'the tar has no end-of-archive marker after its last entry');
  }
  return { ...compressed.result(), entries };
}

/**
 * For relations files: gzip-compressed NDJSON, every line a JSON value (a final newline ends the last line and adds
 * none; no lines at all is a relation with no records). Same single streaming pass; entries = lines.
 */
export async function verifyNdjsonGz(files: LocalFiles, path: string): Promise<ArchiveCheck> {
  const compressed = measureCompressed(path);
  const lines = ndjsonLines(path);
  try {
    await pipeline(files.readStream(path), compressed.stream, createGunzip(), lines.stream);
  } catch (error) {
    if (error instanceof ArchiveInvalidError) throw error;
    throw asGzipProblem(path, error);
  }
  return { ...compressed.result(), entries: lines.count() };
}

/** Size and SHA-256 of a file, streamed. */
export async function sha256File(files: LocalFiles, path: string): Promise<{ bytes: number; sha256: string }> {
  const hash = createHash('sha256');
  let bytes = 0;
  for await (const chunk of files.readStream(path)) {
    const buffer = chunk as Buffer;
    hash.update(buffer);
    bytes += buffer.length;
  }
  return { bytes, sha256: hash.digest('hex') };
}

/**
 * Passes the file's bytes on unchanged, hashing and counting them on the way, so the checksum is of exactly the bytes
 * that were verified. Refuses an empty file, and one that does not start as gzip (zlib's own word for it, "incorrect
 * header check", would not tell a user much).
 */
function measureCompressed(path: string): { stream: Transform; result: () => { bytes: number; sha256: string } } {
  const hash = createHash('sha256');
  let bytes = 0;
  const stream = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      for (let index = 0; bytes + index < GZIP_MAGIC.length && index < chunk.length; index += 1) {
        if (chunk[index] !== GZIP_MAGIC[bytes + index]) return done(new ArchiveInvalidError(path, 'not gzip'));
      }
      hash.update(chunk);
      bytes += chunk.length;
      done(null, chunk);
    },
    flush(done) {
      done(bytes === 0 ? new ArchiveInvalidError(path, 'empty file') : null);
    },
  });
  return { stream, result: () => ({ bytes, sha256: hash.digest('hex') }) };
}

/** Counts the bytes passing through, unchanged. */
function countBytes(): { stream: Transform; count: () => number } {
  let count = 0;
  const stream = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      count += chunk.length;
      done(null, chunk);
    },
  });
  return { stream, count: () => count };
}

/**
 * Checks every line as it arrives. A line is only ever held until its end is seen: one spanning many chunks is
 * gathered in pieces, not re-scanned at each chunk. The text must be UTF-8, as JSON is.
 */
function ndjsonLines(path: string): { stream: Writable; count: () => number } {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  let lines = 0;
  let pending: string[] = [];
  const checkLine = (raw: string) => {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    const number = lines + 1;
    if (line.trim() === '') throw new ArchiveInvalidError(path, 'not ndjson', `line ${number} is empty`);
    try {
      JSON.parse(line);
    } catch (error) {
      throw new ArchiveInvalidError(
        path,
        'not ndjson',
        `line ${number} is not JSON: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    lines = number;
  };
  const take = (text: string, atEnd: boolean) => {
    let start = 0;
    for (let newline = text.indexOf('\n'); newline !== -1; newline = text.indexOf('\n', start)) {
      pending.push(text.slice(start, newline));
      checkLine(pending.join(''));
      pending = [];
      start = newline + 1;
    }
    if (start < text.length) pending.push(text.slice(start));
    if (atEnd && pending.length > 0) checkLine(pending.join(''));
  };
  const decode = (chunk: Buffer | undefined): string => {
    try {
      return chunk ? decoder.decode(chunk, { stream: true }) : decoder.decode();
    } catch {
      throw new ArchiveInvalidError(path, 'not ndjson', `not UTF-8 after line ${lines}`);
    }
  };
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      try {
        take(decode(chunk), false);
        done();
      } catch (error) {
        done(error as Error);
      }
    },
    final(done) {
      try {
        take(decode(undefined), true);
        done();
      } catch (error) {
        done(error as Error);
      }
    },
  });
  return { stream, count: () => lines };
}

/** zlib's errors in the words of ArchiveInvalidError; anything else (a file that cannot be read) as it is. */
function asGzipProblem(path: string, error: unknown): unknown {
  if (error instanceof ArchiveInvalidError) return error;
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string' || !code.startsWith('Z_')) return error;
  const message = error instanceof Error ? error.message : String(error);
  // Z_BUF_ERROR is zlib's "unexpected end of file": the input stopped before the gzip stream (or its trailer) ended.
  if (code === 'Z_BUF_ERROR') return new ArchiveInvalidError(path, 'truncated', message);
  return new ArchiveInvalidError(path, 'corrupt gzip', message);
}

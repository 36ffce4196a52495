import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { Transform, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { extract } from 'tar-stream';

/**
 * Checks of a downloaded backup, streamed (an archive may be gigabytes): the SHA-256 and size of the bytes on disk,
 * and that they are what they claim to be, a gzip-compressed tar that ends properly, or gzip-compressed NDJSON.
 */

export interface ArchiveCheck {
  readonly bytes: number;
  readonly sha256: string;
  /** Tar entries, or NDJSON lines. */
  readonly entries: number;
}

/** The file is not a complete archive of the kind expected; the message says what is wrong. */
export class ArchiveInvalidError extends Error {}

/** Hashes and counts what passes through, unchanged. */
function measuring(): { stream: Transform; result: () => { bytes: number; sha256: string } } {
  const hash = createHash('sha256');
  let bytes = 0;
  const stream = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      hash.update(chunk);
      bytes += chunk.length;
      done(null, chunk);
    },
  });
  return { stream, result: () => ({ bytes, sha256: hash.digest('hex') }) };
}

function invalid(path: string, error: unknown): ArchiveInvalidError {
  const message = error instanceof Error ? error.message : String(error);
  if (/incorrect header check|not in gzip format|invalid/i.test(message)) return new ArchiveInvalidError(`${path}: not gzip (${message})`);
  if (/unexpected end|premature|truncated/i.test(message)) return new ArchiveInvalidError(`${path}: truncated (${message})`);
  return new ArchiveInvalidError(`${path}: ${message}`);
}

/** A gzip-compressed tar with at least one entry, read to its end. */
export async function verifyArchive(path: string): Promise<ArchiveCheck> {
  const measure = measuring();
  const tar = extract();
  let entries = 0;
  tar.on('entry', (_header, stream, next) => {
    entries += 1;
    stream.on('end', next);
    stream.resume();
  });
  let empty = true;
  const seen = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      if (chunk.length > 0) empty = false;
      done(null, chunk);
    },
  });
  try {
    await pipeline(createReadStream(path), measure.stream, seen, createGunzip(), tar);
  } catch (error) {
    if (empty) throw new ArchiveInvalidError(`${path}: empty file`);
    throw invalid(path, error);
  }
  if (empty) throw new ArchiveInvalidError(`${path}: empty file`);
  if (entries === 0) throw new ArchiveInvalidError(`${path}: no tar entries`);
  return { ...measure.result(), entries };
}

/** Gzip-compressed newline-delimited JSON: every non-empty line a JSON value. */
export async function verifyNdjsonGz(path: string): Promise<ArchiveCheck> {
  const measure = measuring();
  let lines = 0;
  let rest = '';
  const check = (line: string): void => {
    if (line.trim() === '') return;
    try {
      JSON.parse(line);
    } catch {
      throw new ArchiveInvalidError(`${path}: line ${lines + 1} is not JSON`);
    }
    lines += 1;
  };
  const reader = new Writable({
    write(chunk: Buffer, _encoding, done) {
      try {
        const text = rest + chunk.toString('utf8');
        const parts = text.split('\n');
        rest = parts.pop() ?? '';
        for (const line of parts) check(line);
        done();
      } catch (error) {
        done(error as Error);
      }
    },
  });
  try {
    await pipeline(createReadStream(path), measure.stream, createGunzip(), reader);
    check(rest);
  } catch (error) {
    if (error instanceof ArchiveInvalidError) throw error;
    throw invalid(path, error);
  }
  return { ...measure.result(), entries: lines };
}

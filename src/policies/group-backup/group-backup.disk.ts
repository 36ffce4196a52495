import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import type { LocalFiles } from '../../effects/local-files';

/**
 * Writing a backup so that a name without a dot is always whole: files are written under a dot-name ending in
 * `.partial`, flushed, renamed into place, and the rename flushed with its folder.
 */

export const PARTIAL_SUFFIX = '.partial';

/** `group.tar.gz` → `.group.tar.gz.partial`: hidden, and never taken for a finished file. */
export function partialName(name: string): string {
  return `.${name}${PARTIAL_SUFFIX}`;
}

/** A leftover of a write cut short (see partialName). */
export function isPartialName(name: string): boolean {
  return name.startsWith('.') && name.endsWith(PARTIAL_SUFFIX);
}

/** Temp file beside the target, flushed to disk, renamed over it, and the folder flushed so the rename lasts. */
export async function writeFileAtomically(files: LocalFiles, path: string, content: string): Promise<void> {
  const temporary = join(dirname(path), partialName(`${randomBytes(4).toString('hex')}.tmp`));
  await files.writeFlushed(temporary, content, 0o644);
  await files.rename(temporary, path);
  await files.flushFolder(dirname(path));
}

/** A file downloaded and verified under its dot-name, put in place: flushed, renamed, and the rename flushed. */
export async function putInPlace(files: LocalFiles, partial: string, final: string): Promise<void> {
  await files.flush(partial);
  await files.rename(partial, final);
  await files.flushFolder(dirname(final));
}

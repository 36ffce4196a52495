import { randomBytes } from 'node:crypto';
import { open, rename } from 'node:fs/promises';
import { dirname, join } from 'node:path';

/**
 * Writing a backup so that a name without a dot is always whole: files are written under a dot-name ending in
 * `.partial`, flushed, renamed into place, and the rename flushed with its folder.
 */

export const PARTIAL_SUFFIX = '.partial';

/** `group.tar.gz` → `.group.tar.gz.partial`: hidden, and never taken for a finished file. */
export function partialName(name: string): string {
  return `.${name}${PARTIAL_SUFFIX}`;
}

/** Temp file beside the target, flushed to disk, renamed over it, and the folder flushed so the rename lasts. */
export async function writeFileAtomically(path: string, content: string): Promise<void> {
  const temporary = join(dirname(path), partialName(`${randomBytes(4).toString('hex')}.tmp`));
  const handle = await open(temporary, 'w', 0o644);
  try {
    await handle.writeFile(content);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(temporary, path);
  await syncFolder(dirname(path));
}

/** Flushes a file already written (a download) before it is renamed into place. */
export async function syncFile(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** A rename is durable once its folder is flushed; a file system that cannot flush a folder (some network ones) is let be. */
export async function syncFolder(folder: string): Promise<void> {
  try {
    const handle = await open(folder, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch {
    // EISDIR/EINVAL/EPERM on file systems without directory fsync: the rename itself has happened.
  }
}

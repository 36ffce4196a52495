import { randomBytes } from 'node:crypto';
import { chmod, open, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/**
 * Writes a secret so that a crash at any moment leaves either the old file or the complete new one, never a torn or
 * readable one. `writeFile(path, data, {mode})` does not change the mode of a file that exists, so the data goes to a
 * fresh temporary file beside the target (same file system: the rename is atomic), is synced, gets its mode, and
 * replaces the target by rename; the directory is synced so the rename itself survives a crash.
 */
export async function writeSecretFile(path: string, content: string, mode = 0o600): Promise<void> {
  const directory = dirname(path);
  const temporary = join(directory, `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
  // `wx`: a leftover with the same name is never reused; 0600 from the start, so the secret is never readable.
  const handle = await open(temporary, 'wx', 0o600);
  try {
    try {
      await handle.writeFile(content, 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    // Explicit: the umask may have taken bits away from the mode given to open.
    await chmod(temporary, mode);
    await rename(temporary, path);
  } catch (error) {
    await unlink(temporary).catch(() => undefined);
    throw error;
  }
  await syncDirectory(directory);
}

async function syncDirectory(directory: string): Promise<void> {
  const handle = await open(directory, 'r');
  try {
    await handle.sync();
  } catch (error) {
    // Some file systems refuse fsync on a directory; the rename is then as durable as they make it.
    const code = (error as { code?: unknown }).code;
    if (code !== 'EINVAL' && code !== 'EISDIR' && code !== 'EPERM') throw error;
  } finally {
    await handle.close();
  }
}

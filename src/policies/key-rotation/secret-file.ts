import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { access, chmod, mkdir, open, rename, stat, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/**
 * Writing key files so that a crash at any moment leaves either the old file or the complete new one, never a torn
 * or world-readable one. `writeFile(path, data, {mode})` does not change the mode of a file that already exists, so
 * the data goes to a fresh temporary file beside the target (same file system, so the rename is atomic), is synced,
 * gets its mode, and replaces the target by rename; the directory is synced so the rename itself survives a crash.
 */
export async function writeFileAtomic(path: string, content: string, mode: number): Promise<void> {
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
    // Explicit: the umask may have taken bits away from the mode given to open, and 0644 for a public key is wanted.
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
    if (!isCode(error, 'EINVAL') && !isCode(error, 'EISDIR') && !isCode(error, 'EPERM')) throw error;
  } finally {
    await handle.close();
  }
}

/**
 * Why `directory` cannot hold keys (missing, not a directory, not writable), or undefined when it can. Checked
 * before anything is generated or uploaded: a key whose private half cannot be kept must not exist.
 */
export async function unusableDirectory(directory: string): Promise<string | undefined> {
  try {
    const info = await stat(directory);
    if (!info.isDirectory()) return `secrets_dir ${directory} is not a directory`;
    await access(directory, constants.W_OK | constants.X_OK);
    return undefined;
  } catch (error) {
    if (isCode(error, 'ENOENT')) return `secrets_dir ${directory} does not exist`;
    if (isCode(error, 'EACCES') || isCode(error, 'EPERM') || isCode(error, 'EROFS')) return `secrets_dir ${directory} is not writable`;
    return `secrets_dir ${directory} cannot be used: ${error instanceof Error ? error.message : String(error)}`;
  }
}

/** Makes the policy's own folder inside secrets_dir, readable by the daemon's user only. */
export async function ensurePrivateDirectory(directory: string): Promise<void> {
  await mkdir(directory, { recursive: true, mode: 0o700 });
}

export function isCode(error: unknown, code: string): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === code;
}

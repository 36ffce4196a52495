import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { access, chmod, mkdir, open, readFile, rename, stat, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/**
 * Files that hold secrets (private keys, and what the bot must remember beside them), on the daemon's disk: written so
 * that a crash at any moment leaves either the old file or the complete new one, never a torn or world-readable one.
 */
export class SecretFiles {
  /**
   * `writeFile(path, data, {mode})` does not change the mode of a file that already exists, so the data goes to a
   * fresh temporary file beside the target (same file system, so the rename is atomic), is synced, gets its mode, and
   * replaces the target by rename; the folder is synced so the rename itself survives a crash.
   */
  async write(path: string, content: string, mode: number): Promise<void> {
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
    await syncFolder(directory);
  }

  /** The file's text, or undefined when there is no file; any other failure is thrown. */
  async read(path: string): Promise<string | undefined> {
    try {
      return await readFile(path, 'utf8');
    } catch (error) {
      if (isCode(error, 'ENOENT')) return undefined;
      throw error;
    }
  }

  /** When the file was last written (epoch ms), or undefined when there is no file. */
  async modifiedAt(path: string): Promise<number | undefined> {
    try {
      return (await stat(path)).mtimeMs;
    } catch (error) {
      if (isCode(error, 'ENOENT')) return undefined;
      throw error;
    }
  }

  /** Renames `from` to `to`; false when there was no `from`. */
  async move(from: string, to: string): Promise<boolean> {
    try {
      await rename(from, to);
      return true;
    } catch (error) {
      if (isCode(error, 'ENOENT')) return false;
      throw error;
    }
  }

  /** Makes a folder (and its parents) readable by the daemon's user only. */
  async makePrivateFolder(directory: string): Promise<void> {
    await mkdir(directory, { recursive: true, mode: 0o700 });
  }

  /**
   * Why `directory` cannot hold secrets (missing, not a directory, not writable), or undefined when it can. Checked
   * before anything is generated or sent: a key whose private half cannot be kept must not exist.
   */
  async unusable(directory: string): Promise<string | undefined> {
    try {
      const info = await stat(directory);
      if (!info.isDirectory()) return `secrets_dir ${directory} is not a directory`;
      await access(directory, constants.W_OK | constants.X_OK);
      return undefined;
    } catch (error) {
      if (isCode(error, 'ENOENT')) return `secrets_dir ${directory} does not exist`;
      if (isCode(error, 'EACCES') || isCode(error, 'EPERM') || isCode(error, 'EROFS'))
        return `secrets_dir ${directory} is not writable`;
      return `secrets_dir ${directory} cannot be used: ${error instanceof Error ? error.message : String(error)}`;
    }
  }
}

async function syncFolder(directory: string): Promise<void> {
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

function isCode(error: unknown, code: string): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === code;
}

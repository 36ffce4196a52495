import { createReadStream } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import type { Readable } from 'node:stream';

/** What lies at a path. */
export interface FileEntry {
  readonly size: number;
  readonly isFile: boolean;
  readonly isFolder: boolean;
}

/** One name in a folder. */
export interface FolderEntry {
  readonly name: string;
  readonly isFolder: boolean;
}

/**
 * The local disk, as policies and the restore see it: every read and write of a file goes through here, handed to a
 * policy in its context (`files` of every policy step's context), so no policy imports `node:fs`. Tests use it too, on temp folders.
 *
 * Absence is an answer (`undefined`, `false`, an empty list) only for a path that does not exist (ENOENT): a path the
 * daemon may not read is an error, never taken for one that is not there.
 */
export class LocalFiles {
  /** What is at `path`, or undefined when nothing is. */
  async stat(path: string): Promise<FileEntry | undefined> {
    try {
      const found = await stat(path);
      return { size: found.size, isFile: found.isFile(), isFolder: found.isDirectory() };
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
  }

  async exists(path: string): Promise<boolean> {
    return (await this.stat(path)) !== undefined;
  }

  /** The file's text (UTF-8), or undefined when there is no such file. */
  async readText(path: string): Promise<string | undefined> {
    try {
      return await readFile(path, 'utf8');
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
  }

  /** The file's bytes as a stream, never read whole: an archive may be gigabytes. A missing file fails the stream (ENOENT). */
  readStream(path: string): Readable {
    return createReadStream(path);
  }

  /** The folder's names, sorted; none when the folder does not exist. */
  async list(folder: string): Promise<FolderEntry[]> {
    try {
      const entries = await readdir(folder, { withFileTypes: true });
      return entries
        .map((entry) => ({ name: entry.name, isFolder: entry.isDirectory() }))
        .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    } catch (error) {
      if (isMissing(error)) return [];
      throw error;
    }
  }

  /** Creates the folder and its parents where missing; `mode` applies to those it creates. */
  async makeFolder(path: string, mode: number): Promise<void> {
    await mkdir(path, { recursive: true, mode });
  }

  /** Removes a file or a folder with everything in it; one already gone is fine. */
  async remove(path: string): Promise<void> {
    await rm(path, { recursive: true, force: true });
  }

  async rename(from: string, to: string): Promise<void> {
    await rename(from, to);
  }

  /** Writes `content` to a new or emptied file created with `mode`, and flushes it to disk before answering. */
  async writeFlushed(path: string, content: string, mode: number): Promise<void> {
    const handle = await open(path, 'w', mode);
    try {
      await handle.writeFile(content);
      await handle.sync();
    } finally {
      await handle.close();
    }
  }

  /** Flushes a file written by someone else (a download) to disk. */
  async flush(path: string): Promise<void> {
    const handle = await open(path, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  }

  /** Flushes a folder, so a rename in it lasts; a file system that cannot flush a folder (some network ones) is let be. */
  async flushFolder(folder: string): Promise<void> {
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
}

function isMissing(error: unknown): boolean {
  return (error as NodeJS.ErrnoException | null)?.code === 'ENOENT';
}

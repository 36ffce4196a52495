import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Endpoint } from '../transport/endpoint';
import type { Transport } from '../transport/transport';
import type { DownloadedFile } from '../types/group-transfer';

/**
 * Streams a binary answer (an export archive, a relation file) to `destination`, overwritten, never held in memory.
 * An error before the first byte (a 404 while the export is not ready) leaves an existing file alone; a download that
 * fails part-way removes the file it started, and a retried attempt starts the file over.
 */
export async function downloadToFile(
  transport: Transport,
  target: Endpoint,
  query: Record<string, string>,
  destination: string,
): Promise<DownloadedFile> {
  let opened = false;
  try {
    return await transport.stream({ method: 'GET', endpoint: target, query }, async (chunks) => {
      // A fresh file per attempt: a retried download starts over instead of appending.
      let bytes = 0;
      const counted = Readable.from(
        (async function* () {
          for await (const chunk of chunks) {
            bytes += chunk.length;
            yield chunk;
          }
        })(),
      );
      opened = true;
      await pipeline(counted, createWriteStream(destination));
      return { path: destination, bytes };
    });
  } catch (error) {
    // Only a file this call started is removed; a 404 before any byte leaves an existing file alone.
    if (opened) await rm(destination, { force: true });
    throw error;
  }
}

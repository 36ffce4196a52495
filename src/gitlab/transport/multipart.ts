import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { basename } from 'node:path';
import { Readable } from 'node:stream';

/** One field of a `multipart/form-data` request: a text value, or a file streamed from disk. */
export type MultipartPart =
  | { name: string; value: string | number }
  | { name: string; filePath: string; filename?: string; contentType?: string };

export interface MultipartBody {
  contentType: string;
  contentLength: number;
  /** A fresh stream per call: a retried attempt must send the whole body again. */
  open(): Readable;
}

/** Quotes a header parameter value; CR, LF and `"` are percent-encoded as browsers do (RFC 7578 §4.2). */
function quoted(value: string): string {
  return `"${value.replace(/\r/g, '%0D').replace(/\n/g, '%0A').replace(/"/g, '%22')}"`;
}

/**
 * Builds a multipart body whose files are read from disk while sending, never held in memory. The length is
 * known up front (file sizes are taken from `stat`), so the request carries `Content-Length`.
 */
export async function multipartBody(parts: readonly MultipartPart[]): Promise<MultipartBody> {
  const boundary = `----forgewarden${randomBytes(16).toString('hex')}`;
  type Segment = Buffer | { path: string };
  const segments: Segment[] = [];
  let length = 0;
  const push = (segment: Segment, size: number): void => {
    segments.push(segment);
    length += size;
  };
  for (const part of parts) {
    if ('value' in part) {
      const head = Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name=${quoted(part.name)}\r\n\r\n${String(part.value)}\r\n`,
      );
      push(head, head.length);
      continue;
    }
    const info = await stat(part.filePath);
    if (!info.isFile()) throw new TypeError(`not a file: ${part.filePath}`);
    const head = Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name=${quoted(part.name)}; filename=${quoted(
        part.filename ?? basename(part.filePath),
      )}\r\nContent-Type: ${part.contentType ?? 'application/octet-stream'}\r\n\r\n`,
    );
    push(head, head.length);
    push({ path: part.filePath }, info.size);
    push(Buffer.from('\r\n'), 2);
  }
  const tail = Buffer.from(`--${boundary}--\r\n`);
  push(tail, tail.length);

  async function* chunks(): AsyncGenerator<Buffer> {
    for (const segment of segments) {
      if (Buffer.isBuffer(segment)) yield segment;
      else for await (const chunk of createReadStream(segment.path)) yield chunk as Buffer;
    }
  }
  return {
    contentType: `multipart/form-data; boundary=${boundary}`,
    contentLength: length,
    open: () => Readable.from(chunks(), { objectMode: false }),
  };
}

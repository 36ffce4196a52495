/** A file sent in a `multipart/form-data` body. */
export class UploadedFile {
  constructor(
    readonly filename: string,
    readonly contentType: string,
    readonly data: Buffer,
  ) {}

  /** What the request log records instead of the bytes. */
  toJSON(): { filename: string; content_type: string; size: number } {
    return { filename: this.filename, content_type: this.contentType, size: this.data.length };
  }
}

/** The boundary of a `multipart/form-data` content type, or undefined for any other type. */
export function multipartBoundary(contentType: string | undefined): string | undefined {
  if (!contentType || !/^\s*multipart\/form-data\s*;/i.test(contentType)) return undefined;
  const match = /;\s*boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
  return match ? (match[1] ?? match[2]) : undefined;
}

/**
 * Parses a `multipart/form-data` body (RFC 7578): text fields become strings, file fields `UploadedFile`s. A
 * repeated name keeps the last value, except `name[]`, which collects all. Throws on a malformed body.
 */
export function parseMultipart(raw: Buffer, boundary: string): Record<string, unknown> {
  const delimiter = Buffer.from(`--${boundary}`);
  const result: Record<string, unknown> = {};
  let position = raw.indexOf(delimiter);
  if (position < 0) throw new Error('multipart: no boundary');
  for (;;) {
    position += delimiter.length;
    if (raw.subarray(position, position + 2).toString() === '--') return result;
    if (raw.subarray(position, position + 2).toString() !== '\r\n') throw new Error('multipart: bad delimiter');
    const headerEnd = raw.indexOf('\r\n\r\n', position + 2);
    if (headerEnd < 0) throw new Error('multipart: no header end');
    const next = raw.indexOf(Buffer.concat([Buffer.from('\r\n'), delimiter]), headerEnd + 4);
    if (next < 0) throw new Error('multipart: unterminated part');
    const headers = raw
      .subarray(position + 2, headerEnd)
      .toString('utf8')
      .split('\r\n');
    const content = raw.subarray(headerEnd + 4, next);
    const disposition = headers.find((h) => /^content-disposition:/i.test(h)) ?? '';
    const name = /;\s*name="([^"]*)"/i.exec(disposition)?.[1];
    if (name === undefined) throw new Error('multipart: part without a name');
    const filename = /;\s*filename="([^"]*)"/i.exec(disposition)?.[1];
    const type =
      headers.find((h) => /^content-type:/i.test(h))?.replace(/^content-type:\s*/i, '') ?? 'application/octet-stream';
    const value =
      filename !== undefined ? new UploadedFile(filename, type, Buffer.from(content)) : content.toString('utf8');
    if (name.endsWith('[]')) result[name] = [...((result[name] as unknown[] | undefined) ?? []), value];
    else result[name] = value;
    position = next + 2;
  }
}

import type { Request } from 'express';

/** The request's body, or undefined once it is larger than `limit` bytes (the rest is not read). */
export async function readBody(request: Request, limit: number): Promise<Buffer | undefined> {
  const declared = Number(request.header('content-length'));
  if (Number.isFinite(declared) && declared > limit) return undefined;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

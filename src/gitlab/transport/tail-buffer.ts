/**
 * Keeps the last `maxBytes` of a byte stream while it flows past, holding at most `maxBytes` plus one chunk, so a
 * multi-megabyte job log is never held whole when only its end matters (failure patterns sit at the end).
 */
export class TailBuffer {
  private chunks: Buffer[] = [];
  private held = 0;
  private seen = 0;

  constructor(private readonly maxBytes: number) {
    if (!Number.isSafeInteger(maxBytes) || maxBytes <= 0) throw new RangeError('maxBytes must be a positive integer');
  }

  push(chunk: Buffer): void {
    this.seen += chunk.length;
    this.chunks.push(chunk);
    this.held += chunk.length;
    while (this.chunks.length > 1 && this.held - this.chunks[0].length >= this.maxBytes) {
      this.held -= this.chunks[0].length;
      this.chunks.shift();
    }
  }

  /** Bytes currently held (at most `maxBytes` plus one chunk). */
  get heldBytes(): number {
    return this.held;
  }

  /** Total bytes that went past. */
  get totalBytes(): number {
    return this.seen;
  }

  get truncated(): boolean {
    return this.seen > this.maxBytes;
  }

  /** The tail as text; a UTF-8 sequence cut in half at the start is dropped rather than shown as U+FFFD. */
  text(): string {
    let tail = Buffer.concat(this.chunks, this.held);
    if (tail.length > this.maxBytes) tail = tail.subarray(tail.length - this.maxBytes);
    if (this.truncated) {
      let start = 0;
      while (start < tail.length && start < 3 && (tail[start] & 0xc0) === 0x80) start++;
      tail = tail.subarray(start);
    }
    return tail.toString('utf8');
  }
}

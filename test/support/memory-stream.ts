import { Writable } from 'node:stream';

/** A stream that keeps what is written to it, so a test can read exactly what a logger printed. */
export class MemoryStream extends Writable {
  readonly chunks: string[] = [];

  override _write(chunk: Buffer | string, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    this.chunks.push(chunk.toString());
    done();
  }

  get text(): string {
    return this.chunks.join('');
  }

  get lines(): Array<Record<string, unknown>> {
    return this.text
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  }
}

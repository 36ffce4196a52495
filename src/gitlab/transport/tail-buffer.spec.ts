import { TailBuffer } from './tail-buffer';

describe('TailBuffer', () => {
  it('keeps only the last bytes while holding at most the limit plus one chunk', () => {
    const buffer = new TailBuffer(1000);
    let peak = 0;
    for (let i = 0; i < 5000; i++) {
      buffer.push(Buffer.from(`line ${String(i).padStart(5, '0')}\n`));
      peak = Math.max(peak, buffer.heldBytes);
    }
    expect(peak).toBeLessThanOrEqual(1000 + 11);
    const text = buffer.text();
    expect(Buffer.byteLength(text)).toBe(1000);
    expect(text.endsWith('line 04999\n')).toBe(true);
    expect(buffer.truncated).toBe(true);
    expect(buffer.totalBytes).toBe(5000 * 11);
  });

  it('returns a short log whole', () => {
    const buffer = new TailBuffer(1000);
    buffer.push(Buffer.from('ok\n'));
    expect(buffer.text()).toBe('ok\n');
    expect(buffer.truncated).toBe(false);
  });

  it('drops a UTF-8 character cut in half at the start', () => {
    const buffer = new TailBuffer(4);
    buffer.push(Buffer.from('aé€xy')); // € is 3 bytes: the last 4 bytes start inside it
    expect(buffer.text()).toBe('xy');
  });

  it('rejects a non-positive size', () => {
    expect(() => new TailBuffer(0)).toThrow(RangeError);
  });
});

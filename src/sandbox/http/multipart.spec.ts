import { multipartBoundary, parseMultipart, UploadedFile } from './multipart';

describe('multipart parsing', () => {
  const body = (boundary: string, parts: string[]): Buffer =>
    Buffer.from(`${parts.map((p) => `--${boundary}\r\n${p}\r\n`).join('')}--${boundary}--\r\n`, 'latin1');

  it('reads the boundary only from multipart/form-data', () => {
    expect(multipartBoundary('multipart/form-data; boundary=abc')).toBe('abc');
    expect(multipartBoundary('multipart/form-data; boundary="a b"')).toBe('a b');
    expect(multipartBoundary('application/json')).toBeUndefined();
    expect(multipartBoundary(undefined)).toBeUndefined();
  });

  it('parses text fields, files (binary with CRLF inside) and name[] lists', () => {
    const parsed = parseMultipart(
      body('xyz', [
        'Content-Disposition: form-data; name="name"\r\n\r\nAcme',
        'Content-Disposition: form-data; name="file"; filename="a.tar.gz"\r\nContent-Type: application/gzip\r\n\r\n\x1f\x8b\r\n--xy\x00\xff',
        'Content-Disposition: form-data; name="ids[]"\r\n\r\n1',
        'Content-Disposition: form-data; name="ids[]"\r\n\r\n2',
      ]),
      'xyz',
    );
    expect(parsed.name).toBe('Acme');
    expect(parsed['ids[]']).toEqual(['1', '2']);
    const file = parsed.file as UploadedFile;
    expect(file).toBeInstanceOf(UploadedFile);
    expect(file.filename).toBe('a.tar.gz');
    expect(file.contentType).toBe('application/gzip');
    expect([...file.data]).toEqual([0x1f, 0x8b, 13, 10, 0x2d, 0x2d, 0x78, 0x79, 0, 0xff]);
    expect(JSON.stringify(file)).toBe('{"filename":"a.tar.gz","content_type":"application/gzip","size":10}');
  });

  it('throws on malformed bodies', () => {
    expect(() => parseMultipart(Buffer.from('nothing'), 'xyz')).toThrow();
    expect(() =>
      parseMultipart(Buffer.from('--xyz\r\nContent-Disposition: form-data; name="a"\r\n\r\nno end'), 'xyz'),
    ).toThrow();
    expect(() => parseMultipart(body('xyz', ['Content-Disposition: form-data\r\n\r\nx']), 'xyz')).toThrow();
  });
});

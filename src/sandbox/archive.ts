import { createCipheriv, createHash } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';

/**
 * The export archives the sandbox writes and reads (group exports in `group-transfer-state.ts`, project exports in
 * `project-archive.ts`): gzip-compressed ustar files, as the forge's `tar -czf` makes them, and the incompressible
 * padding that makes an archive as large as a test or bench asks.
 */

export interface TarEntry {
  name: string;
  data: Buffer;
}

/** The archive format version the forge writes to `VERSION` (`Gitlab::ImportExport.version`) and checks on import. */
export const ARCHIVE_VERSION = '0.2.4';

/** A gzip-compressed tar of `entries`, in order. */
export function gzipTar(entries: TarEntry[]): Buffer {
  return gzipSync(tar(entries));
}

/** The entries of a gzip-compressed tar; throws (zlib's or `tar: …` message) when the bytes are not one. */
export function gunzipTar(archive: Buffer): TarEntry[] {
  return untar(gunzipSync(archive));
}

/** What an export's padding belongs to: a group and a project with the same id pad with different bytes. */
export type PaddingScope = 'group' | 'project';

/**
 * `size` bytes of an AES-CTR keystream seeded by the owner's kind and id: the same bytes for every export of that
 * group or project, and pseudo-random, so that gzip cannot shrink them and the archive really is that large.
 */
export function padding(size: number, scope: PaddingScope, id: number): Buffer {
  const key = createHash('sha256').update('forgewarden sandbox export padding').digest().subarray(0, 16);
  const iv = Buffer.alloc(16);
  iv.writeUInt32BE(id >>> 0, 0);
  // A group's IV is its id and zeros, as before projects had exports of their own.
  if (scope === 'project') iv.writeUInt8(1, 4);
  const cipher = createCipheriv('aes-128-ctr', key, iv);
  return Buffer.concat([cipher.update(Buffer.alloc(size)), cipher.final()]);
}

// ---- a minimal ustar writer and reader -----------------------------------------------------------------------

function tar(entries: TarEntry[]): Buffer {
  const blocks: Buffer[] = [];
  for (const entry of entries) {
    const header = Buffer.alloc(512);
    header.write(entry.name, 0, 100, 'utf8');
    header.write('0000644\0', 100);
    header.write('0000000\0', 108);
    header.write('0000000\0', 116);
    header.write(`${entry.data.length.toString(8).padStart(11, '0')}\0`, 124);
    header.write('00000000000\0', 136);
    header.write('        ', 148); // checksum field counts as spaces while summing
    header.write('0', 156);
    header.write('ustar\0', 257);
    header.write('00', 263);
    let sum = 0;
    for (const byte of header) sum += byte;
    header.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148);
    blocks.push(header, entry.data, Buffer.alloc((512 - (entry.data.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}

function untar(archive: Buffer): TarEntry[] {
  const entries: TarEntry[] = [];
  for (let offset = 0; offset + 512 <= archive.length;) {
    const header = archive.subarray(offset, offset + 512);
    if (header.every((byte) => byte === 0)) break;
    const ownName = header.subarray(0, 100).toString('utf8').replace(/\0.*$/s, '');
    // ustar keeps the directory part of a long name in `prefix` (offset 345).
    const prefix = header.subarray(257, 263).toString('ascii').startsWith('ustar')
      ? header.subarray(345, 500).toString('utf8').replace(/\0.*$/s, '')
      : '';
    const name = prefix ? `${prefix}/${ownName}` : ownName;
    const size = parseInt(header.subarray(124, 136).toString('ascii').replace(/\0.*$/s, '').trim() || '0', 8);
    if (!Number.isFinite(size) || offset + 512 + size > archive.length) throw new Error('tar: truncated');
    entries.push({ name, data: archive.subarray(offset + 512, offset + 512 + size) });
    offset += 512 + Math.ceil(size / 512) * 512;
  }
  return entries;
}

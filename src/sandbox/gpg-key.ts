import { createHash } from 'node:crypto';

/**
 * Armored OpenPGP public keys, checked minimally: the armor lines must be there and the body must be base64 that
 * decodes to something. The sandbox does not parse packets; its fingerprint is the SHA-1 of the decoded body (the
 * real one hashes the key packet only), so the same key text always gets the same fingerprint and key id.
 */

export const GPG_BEGIN = '-----BEGIN PGP PUBLIC KEY BLOCK-----';
export const GPG_END = '-----END PGP PUBLIC KEY BLOCK-----';

/** The forge's model errors (`GpgKey` validations). */
export const GPG_KEY_INVALID = `is invalid. A valid public GPG key begins with '${GPG_BEGIN}' and ends with '${GPG_END}'`;
export const GPG_BLANK = "can't be blank";

export interface ParsedGpgKey {
  /** The base64 body without line breaks, headers or checksum. */
  normalized: string;
  /** 40 upper-case hex digits. */
  fingerprint: string;
  /** The last 16 hex digits of the fingerprint. */
  primaryKeyId: string;
}

export type GpgKeyProblem = 'armor' | 'body';

/** The parsed key, or which check failed: `armor` (begin/end lines) or `body` (nothing decodable between them). */
export function parseGpgPublicKey(text: string): ParsedGpgKey | GpgKeyProblem {
  const trimmed = text.trim();
  if (!trimmed.startsWith(GPG_BEGIN) || !trimmed.endsWith(GPG_END)) return 'armor';
  const lines = trimmed
    .slice(GPG_BEGIN.length, trimmed.length - GPG_END.length)
    .split(/\r?\n/)
    .map((line) => line.trim());
  // Armor headers (`Version: ...`) cannot be base64 (`: `); the checksum line starts with `=`.
  const body = lines.filter((line) => line !== '' && !line.startsWith('=') && !/^[A-Za-z][A-Za-z-]*: /.test(line));
  const normalized = body.join('');
  if (normalized.length < 8 || !/^[A-Za-z0-9+/]+={0,2}$/.test(normalized) || normalized.length % 4 !== 0) return 'body';
  const fingerprint = createHash('sha1').update(Buffer.from(normalized, 'base64')).digest('hex').toUpperCase();
  return { normalized, fingerprint, primaryKeyId: fingerprint.slice(-16) };
}

/** A well-formed armored key block whose body is derived from `seed` (for worlds and tests). */
export function armoredGpgKey(seed: string): string {
  const bytes = Buffer.concat([Buffer.from([0x99, 0x01, 0x0d, 0x04]), createHash('sha512').update(seed).digest()]);
  const base64 = bytes.toString('base64');
  const lines = base64.match(/.{1,64}/g) ?? [];
  return [GPG_BEGIN, '', ...lines, `=${createHash('md5').update(seed).digest('base64').slice(0, 4)}`, GPG_END].join(
    '\n',
  );
}

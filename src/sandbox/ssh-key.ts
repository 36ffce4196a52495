import { createHash, generateKeyPairSync } from 'node:crypto';

/**
 * OpenSSH public keys (`<type> <base64 blob> [comment]`), checked and fingerprinted the way the forge does before it
 * stores a user SSH key or a deploy key: the blob must decode and start with its own type name, and the fingerprints
 * are MD5 (colon hex) and SHA256 (unpadded base64) of the decoded blob.
 */

export const SUPPORTED_KEY_TYPES = [
  'ssh-rsa',
  'ssh-dss',
  'ecdsa-sha2-nistp256',
  'ecdsa-sha2-nistp384',
  'ecdsa-sha2-nistp521',
  'ssh-ed25519',
  'sk-ecdsa-sha2-nistp256@openssh.com',
  'sk-ssh-ed25519@openssh.com',
] as const;

export interface ParsedSshKey {
  type: string;
  /** `<type> <base64>` without the comment: what the forge compares to find the same key twice. */
  normalized: string;
  fingerprintMd5: string;
  fingerprintSha256: string;
}

export function parseSshPublicKey(text: string): ParsedSshKey | undefined {
  const parts = text.trim().split(/\s+/);
  if (parts.length < 2) return undefined;
  const [type, encoded] = parts;
  if (!(SUPPORTED_KEY_TYPES as readonly string[]).includes(type)) return undefined;
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded)) return undefined;
  const blob = Buffer.from(encoded, 'base64');
  if (blob.length < 4) return undefined;
  const nameLength = blob.readUInt32BE(0);
  if (4 + nameLength > blob.length || blob.subarray(4, 4 + nameLength).toString('latin1') !== type) return undefined;
  if (blob.length === 4 + nameLength) return undefined;
  const md5 = createHash('md5').update(blob).digest('hex');
  return {
    type,
    normalized: `${type} ${encoded}`,
    fingerprintMd5: md5.match(/../g)?.join(':') ?? md5,
    fingerprintSha256: `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`,
  };
}

/** A fresh, valid Ed25519 public key line, for worlds built in code and for tests. */
export function generateEd25519PublicKey(comment = 'sandbox'): string {
  const { publicKey } = generateKeyPairSync('ed25519');
  const jwk = publicKey.export({ format: 'jwk' });
  const raw = Buffer.from(jwk.x ?? '', 'base64url');
  const type = Buffer.from('ssh-ed25519');
  const blob = Buffer.concat([uint32(type.length), type, uint32(raw.length), raw]);
  return `ssh-ed25519 ${blob.toString('base64')} ${comment}`;
}

function uint32(value: number): Buffer {
  const buffer = Buffer.alloc(4);
  buffer.writeUInt32BE(value);
  return buffer;
}

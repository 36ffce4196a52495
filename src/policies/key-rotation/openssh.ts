import { createHash, generateKeyPairSync, type JsonWebKey, type KeyObject, randomBytes } from 'node:crypto';

/**
 * OpenSSH key files written by hand from Node's key objects. OpenSSH refuses Node's PKCS#8 export of an Ed25519
 * private key, so the private key is written in OpenSSH's own container, `openssh-key-v1` (PROTOCOL.key in the
 * OpenSSH sources), unencrypted: the daemon's protection is the file's mode 0600, not a passphrase it would have to
 * store next to it.
 */

export const KEY_TYPES = ['ed25519', 'rsa', 'ecdsa'] as const;
export type KeyType = (typeof KEY_TYPES)[number];

/** RSA keys are generated at 4096 bits; ECDSA on nistp256, the curve every OpenSSH and forge accepts. */
export const RSA_BITS = 4096;

/** A key pair in OpenSSH's formats. The private key text must only ever go to a file of mode 0600. */
export interface OpenSshKeyPair {
  /** The armored private key, as `ssh-keygen` writes it. */
  readonly privateKey: string;
  /** One line: `ssh-ed25519 AAAA… comment`. */
  readonly publicKey: string;
  /** `SHA256:…` as `ssh-keygen -l` prints it. */
  readonly fingerprint: string;
}

const MAGIC = Buffer.from('openssh-key-v1\0', 'latin1');
/** The armor's label; the lines around the base64 body are `-----BEGIN <label>-----` and `-----END <label>-----`. */
const ARMOR_LABEL = 'OPENSSH PRIVATE KEY';
const BEGIN = `-----BEGIN ${ARMOR_LABEL}-----`;
const END = `-----END ${ARMOR_LABEL}-----`;
/** OpenSSH wraps the base64 body at 70 columns. */
const LINE = 70;
/** The private section is padded to the cipher's block size; "none" counts as 8. */
const BLOCK = 8;

/** A fresh key pair of `type`; `comment` ends up in both files (never a secret). */
export function generateOpenSshKeyPair(type: KeyType, comment: string): OpenSshKeyPair {
  const { privateKey } = generate(type);
  return openSshKeyPair(privateKey, comment);
}

/** Both halves of `privateKey` (an Ed25519, RSA or P-256 key object) in OpenSSH's formats. */
export function openSshKeyPair(privateKey: KeyObject, comment: string): OpenSshKeyPair {
  const fields = keyFields(privateKey);
  const publicBlob = Buffer.concat(fields.publicParts);
  const check = randomBytes(4);
  const unpadded = Buffer.concat([check, check, ...fields.privateParts, sshString(comment)]);
  const padding = Buffer.from(Array.from({ length: (BLOCK - (unpadded.length % BLOCK)) % BLOCK }, (_, i) => i + 1));
  const body = Buffer.concat([
    MAGIC,
    sshString('none'),
    sshString('none'),
    sshString(Buffer.alloc(0)),
    uint32(1),
    sshString(publicBlob),
    sshString(Buffer.concat([unpadded, padding])),
  ]);
  const lines = body.toString('base64').match(new RegExp(`.{1,${LINE}}`, 'g')) ?? [];
  return {
    privateKey: `${BEGIN}\n${lines.join('\n')}\n${END}\n`,
    publicKey: `${fields.name} ${publicBlob.toString('base64')}${comment ? ` ${comment}` : ''}`,
    fingerprint: fingerprintOfBlob(publicBlob),
  };
}

/** What the unencrypted header of an OpenSSH private key file says about its key. */
export interface OpenSshPrivateKeyInfo {
  readonly type: string;
  /** `<type> <base64>`, without comment. */
  readonly publicKey: string;
  readonly fingerprint: string;
  readonly comment: string;
}

/**
 * Reads a file this module wrote (unencrypted, one key) and returns its public half, checking that the private
 * section agrees with the header: the daemon reads the key on disk back before uploading its public half, so what
 * goes to the forge is provably what the file holds. Throws on anything else; the message never quotes the file.
 */
export function readOpenSshPrivateKey(text: string): OpenSshPrivateKeyInfo {
  const match = new RegExp(`${BEGIN}\\s*([A-Za-z0-9+/=\\s]+?)\\s*${END}`).exec(text);
  if (!match) throw new Error('not an OpenSSH private key file');
  const reader = new Reader(Buffer.from(match[1].replace(/\s+/g, ''), 'base64'));
  if (!reader.take(MAGIC.length).equals(MAGIC)) throw new Error('not an openssh-key-v1 file');
  const cipher = reader.string().toString('latin1');
  const kdf = reader.string().toString('latin1');
  reader.string();
  if (cipher !== 'none' || kdf !== 'none') throw new Error(`encrypted private key (${cipher}/${kdf}) cannot be read`);
  if (reader.uint32() !== 1) throw new Error('expected exactly one key');
  const publicBlob = reader.string();
  const section = new Reader(reader.string());
  if (!section.take(4).equals(section.take(4))) throw new Error('check integers differ: damaged private section');
  const type = new Reader(publicBlob).string().toString('latin1');
  if (section.string().toString('latin1') !== type) throw new Error('private section is of another key type');
  const privatePublic = privatePublicPart(type, section);
  if (!publicBlob.subarray(publicBlob.length - privatePublic.length).equals(privatePublic)) {
    throw new Error('private section does not belong to the public key');
  }
  const comment = section.string().toString('utf8');
  return {
    type,
    publicKey: `${type} ${publicBlob.toString('base64')}`,
    fingerprint: fingerprintOfBlob(publicBlob),
    comment,
  };
}

/** `SHA256:<unpadded base64>` of a public key line (`type base64 [comment]`), or undefined when it is none. */
export function fingerprintOfPublicKey(line: string): string | undefined {
  const encoded = line.trim().split(/\s+/)[1];
  if (!encoded || !/^[A-Za-z0-9+/]+={0,2}$/.test(encoded)) return undefined;
  return fingerprintOfBlob(Buffer.from(encoded, 'base64'));
}

function fingerprintOfBlob(blob: Buffer): string {
  return `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
}

function generate(type: KeyType): { privateKey: KeyObject } {
  switch (type) {
    case 'ed25519':
      return generateKeyPairSync('ed25519');
    case 'rsa':
      return generateKeyPairSync('rsa', { modulusLength: RSA_BITS, publicExponent: 0x10001 });
    case 'ecdsa':
      return generateKeyPairSync('ec', { namedCurve: 'P-256' });
  }
}

interface KeyFields {
  readonly name: string;
  readonly publicParts: Buffer[];
  /** Key type string and private fields, as the private section lists them. */
  readonly privateParts: Buffer[];
}

/** The wire fields of each key type (RFC 4253 §6.6, RFC 5656 §3.1, RFC 8709 §4; PROTOCOL.key for the private parts). */
function keyFields(privateKey: KeyObject): KeyFields {
  const jwk = privateKey.export({ format: 'jwk' });
  switch (privateKey.asymmetricKeyType) {
    case 'ed25519': {
      const name = 'ssh-ed25519';
      const pub = b64url(jwk, 'x');
      // OpenSSH keeps the 32-byte seed followed by the public key as its 64-byte "private key".
      const secret = Buffer.concat([b64url(jwk, 'd'), pub]);
      return {
        name,
        publicParts: [sshString(name), sshString(pub)],
        privateParts: [sshString(name), sshString(pub), sshString(secret)],
      };
    }
    case 'rsa': {
      const name = 'ssh-rsa';
      const [n, e, d, p, q, qi] = (['n', 'e', 'd', 'p', 'q', 'qi'] as const).map((field) => mpint(b64url(jwk, field)));
      // JWK's `qi` is q⁻¹ mod p, which is OpenSSH's `iqmp`.
      return { name, publicParts: [sshString(name), e, n], privateParts: [sshString(name), n, e, d, qi, p, q] };
    }
    case 'ec': {
      if (jwk.crv !== 'P-256')
        throw new Error(`unsupported curve ${String(jwk.crv)}; only P-256 (nistp256) is written`);
      const name = 'ecdsa-sha2-nistp256';
      const point = Buffer.concat([Buffer.from([4]), b64url(jwk, 'x'), b64url(jwk, 'y')]);
      const parts = [sshString(name), sshString('nistp256'), sshString(point)];
      return { name, publicParts: parts, privateParts: [...parts, mpint(b64url(jwk, 'd'))] };
    }
    default:
      throw new Error(`unsupported key type ${String(privateKey.asymmetricKeyType)}`);
  }
}

/** The private section's copy of the public part, to compare with the header's public blob. */
function privatePublicPart(type: string, section: Reader): Buffer {
  if (type === 'ssh-ed25519') {
    const pub = section.string();
    const secret = section.string();
    if (secret.length !== 64 || !secret.subarray(32).equals(pub)) throw new Error('damaged ed25519 private key');
    return sshString(pub);
  }
  if (type === 'ssh-rsa') {
    const n = section.string();
    const e = section.string();
    for (let i = 0; i < 4; i++) section.string();
    return Buffer.concat([sshString(e), sshString(n)]);
  }
  if (type.startsWith('ecdsa-sha2-')) {
    const curve = section.string();
    const point = section.string();
    section.string();
    return Buffer.concat([sshString(curve), sshString(point)]);
  }
  throw new Error(`unsupported key type ${type}`);
}

function b64url(jwk: JsonWebKey, field: 'x' | 'y' | 'd' | 'n' | 'e' | 'p' | 'q' | 'qi'): Buffer {
  const value = jwk[field];
  if (typeof value !== 'string') throw new Error(`the key has no JWK field "${field}"`);
  return Buffer.from(value, 'base64url');
}

function uint32(value: number): Buffer {
  const buffer = Buffer.alloc(4);
  buffer.writeUInt32BE(value);
  return buffer;
}

function sshString(value: Buffer | string): Buffer {
  const bytes = typeof value === 'string' ? Buffer.from(value, 'utf8') : value;
  return Buffer.concat([uint32(bytes.length), bytes]);
}

/** RFC 4251 §5 mpint of an unsigned big-endian number: no leading zeros, one 0x00 when the top bit is set. */
function mpint(unsigned: Buffer): Buffer {
  let start = 0;
  while (start < unsigned.length && unsigned[start] === 0) start++;
  const trimmed = unsigned.subarray(start);
  const bytes = trimmed.length > 0 && (trimmed[0] & 0x80) !== 0 ? Buffer.concat([Buffer.from([0]), trimmed]) : trimmed;
  return sshString(bytes);
}

class Reader {
  private offset = 0;
  constructor(private readonly buffer: Buffer) {}

  take(length: number): Buffer {
    if (this.offset + length > this.buffer.length) throw new Error('truncated key data');
    const out = this.buffer.subarray(this.offset, this.offset + length);
    this.offset += length;
    return out;
  }

  uint32(): number {
    return this.take(4).readUInt32BE(0);
  }

  string(): Buffer {
    return this.take(this.uint32());
  }
}

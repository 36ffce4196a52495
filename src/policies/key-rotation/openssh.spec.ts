import { execFileSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseSshPublicKey } from '../../sandbox/ssh-key';
import {
  fingerprintOfPublicKey,
  generateOpenSshKeyPair,
  KEY_TYPES,
  openSshKeyPair,
  readOpenSshPrivateKey,
} from './openssh';

/** ssh-keygen is installed here and in CI; without it, the file is read back by this module's own parser instead. */
function sshKeygen(): boolean {
  try {
    execFileSync('ssh-keygen', ['-?'], { stdio: 'ignore' });
    return true;
  } catch (error) {
    return (error as { code?: string }).code !== 'ENOENT';
  }
}

describe('OpenSSH private key writer', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'openssh-spec-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** The public key OpenSSH itself derives from the private key file: `type base64` without comment. */
  function derivedPublicKey(privateKey: string, name: string): string {
    const file = join(dir, name);
    writeFileSync(file, privateKey, { mode: 0o600 });
    if (!sshKeygen()) return readOpenSshPrivateKey(privateKey).publicKey;
    return execFileSync('ssh-keygen', ['-y', '-f', file], { encoding: 'utf8' })
      .trim()
      .split(/\s+/)
      .slice(0, 2)
      .join(' ');
  }

  it.each(KEY_TYPES)('writes a %s key that ssh-keygen -y reads back to the same public key', (type) => {
    const pair = generateOpenSshKeyPair(type, 'forgewarden-test');
    const [keyType, blob, comment] = pair.publicKey.split(' ');
    expect(comment).toBe('forgewarden-test');
    expect(derivedPublicKey(pair.privateKey, `id_${type}`)).toBe(`${keyType} ${blob}`);
    expect(keyType).toBe({ ed25519: 'ssh-ed25519', rsa: 'ssh-rsa', ecdsa: 'ecdsa-sha2-nistp256' }[type]);
    // The forge's own check (the sandbox's copy of it) accepts the public key with the fingerprint the daemon shows.
    expect(parseSshPublicKey(pair.publicKey)?.fingerprintSha256).toBe(pair.fingerprint);
  });

  it('frames the file as OpenSSH does: armour lines, 70 columns, unencrypted, its own public half and comment inside', () => {
    const pair = generateOpenSshKeyPair('ed25519', 'ci key');
    const lines = pair.privateKey.trimEnd().split('\n');
    expect(lines[0]).toBe('-----BEGIN OPENSSH PRIVATE KEY-----');
    expect(lines.at(-1)).toBe('-----END OPENSSH PRIVATE KEY-----');
    expect(lines.slice(1, -2).every((line) => line.length === 70)).toBe(true);
    expect(readOpenSshPrivateKey(pair.privateKey)).toEqual({
      type: 'ssh-ed25519',
      publicKey: pair.publicKey.split(' ').slice(0, 2).join(' '),
      fingerprint: pair.fingerprint,
      comment: 'ci key',
    });
  });

  it('shows the fingerprint ssh-keygen -l shows', () => {
    const pair = generateOpenSshKeyPair('ecdsa', 'fp');
    const file = join(dir, 'fp.pub');
    writeFileSync(file, `${pair.publicKey}\n`);
    expect(fingerprintOfPublicKey(pair.publicKey)).toBe(pair.fingerprint);
    if (sshKeygen())
      expect(execFileSync('ssh-keygen', ['-l', '-f', file], { encoding: 'utf8' })).toContain(pair.fingerprint);
  });

  it('writes keys Node made elsewhere, and keeps a leading zero byte out of the numbers', () => {
    // Many RSA keys have a modulus whose top bit is set, so its mpint needs a 0x00 first; ssh-keygen refuses it otherwise.
    for (let i = 0; i < 3; i++) {
      const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 1024 });
      const pair = openSshKeyPair(privateKey, '');
      expect(derivedPublicKey(pair.privateKey, `rsa-${i}`)).toBe(pair.publicKey);
    }
  });

  it('refuses files it cannot vouch for, without quoting them', () => {
    const pair = generateOpenSshKeyPair('ed25519', 'x');
    expect(() =>
      readOpenSshPrivateKey('-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEI\n-----END PRIVATE KEY-----\n'),
    ).toThrow('not an OpenSSH private key file');
    const other = generateOpenSshKeyPair('ed25519', 'x');
    const swapped = pair.privateKey.split('\n').slice(0, 3).concat(other.privateKey.split('\n').slice(3)).join('\n');
    expect(() => readOpenSshPrivateKey(swapped)).toThrow(/check integers|does not belong|damaged|truncated/);
  });
});

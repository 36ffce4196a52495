import { generateEd25519PublicKey, parseSshPublicKey } from './ssh-key';

describe('parseSshPublicKey', () => {
  it('computes the fingerprints ssh-keygen prints', () => {
    const key = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINiQd6JEAitN/txCVP4GFFSJsNjIGAUlHmumD/QtwXAv release-deploy';
    expect(parseSshPublicKey(key)).toEqual({
      type: 'ssh-ed25519',
      normalized: 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINiQd6JEAitN/txCVP4GFFSJsNjIGAUlHmumD/QtwXAv',
      fingerprintMd5: '0d:58:e5:89:6c:af:99:64:00:26:d1:4e:95:27:a8:36',
      fingerprintSha256: 'SHA256:I1US3nqvNKNuqD0sQ11xGicNwQ9EDXG3YXcbtskZ4Gc',
    });
  });

  it.each([
    ['garbage', 'not a key at all'],
    ['unknown type', 'ssh-foo AAAAC3NzaC1lZDI1NTE5AAAAINiQd6JEAitN'],
    ['blob of another type', 'ssh-rsa AAAAC3NzaC1lZDI1NTE5AAAAINiQd6JEAitN/txCVP4GFFSJsNjIGAUlHmumD/QtwXAv'],
    ['not base64', 'ssh-ed25519 !!!!'],
    ['type only', 'ssh-ed25519'],
  ])('rejects %s', (_title, text) => {
    expect(parseSshPublicKey(text)).toBeUndefined();
  });

  it('accepts the keys it generates, each with its own fingerprint', () => {
    const a = parseSshPublicKey(generateEd25519PublicKey('a'));
    const b = parseSshPublicKey(generateEd25519PublicKey('b'));
    expect(a?.type).toBe('ssh-ed25519');
    expect(a?.fingerprintSha256).not.toBe(b?.fingerprintSha256);
  });
});

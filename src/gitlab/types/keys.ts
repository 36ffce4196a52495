import type { Timestamp } from './common';

/** Spec 02 §2. */
export interface SshKey {
  id: number;
  title: string;
  /** Public key text. */
  key: string;
  created_at: Timestamp;
  /** Set only when the key expires. */
  expires_at?: Timestamp | null;
}

export interface CreateSshKeyParams {
  title: string;
  key: string;
  /** ISO 8601. */
  expires_at?: Timestamp | Date;
}

/** Spec 02 §2; `can_push` is absent from the instance-wide list. */
export interface DeployKey {
  id: number;
  title: string;
  key: string;
  created_at: Timestamp;
  can_push: boolean;
}

export type InstanceDeployKey = Omit<DeployKey, 'can_push'>;

export interface CreateDeployKeyParams {
  title: string;
  key: string;
  can_push?: boolean;
}

export interface EditDeployKeyParams {
  title?: string;
  can_push?: boolean;
}

/** Spec 02 §2 "GPG key". */
export interface GpgKey {
  id: number;
  /** Armored public key block (`-----BEGIN PGP PUBLIC KEY BLOCK-----` ...). */
  key: string;
  created_at: Timestamp;
}

export interface CreateGpgKeyParams {
  /** Armored public key block. */
  key: string;
}

import type { Timestamp } from './common';
import type { ProjectSummary } from './jobs';

/** GitLab's "User SSH and GPG keys API". */
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

/** GitLab's "Deploy keys API"; `can_push` is absent from the instance-wide list. */
export interface DeployKey {
  id: number;
  title: string;
  key: string;
  created_at: Timestamp;
  can_push: boolean;
}

/**
 * A key of `GET /deploy_keys` (administrators only). Beyond the endpoint table (GitLab's "Deploy keys API"): the
 * projects it is enabled on, by access; `projects_with_readonly_access` only from the forge's 16.0 on (absent before).
 */
export interface InstanceDeployKey extends Omit<DeployKey, 'can_push'> {
  projects_with_write_access?: ProjectSummary[];
  projects_with_readonly_access?: ProjectSummary[];
}

export interface CreateDeployKeyParams {
  title: string;
  key: string;
  can_push?: boolean;
}

export interface EditDeployKeyParams {
  title?: string;
  can_push?: boolean;
}

/** A GPG key (GitLab's "User SSH and GPG keys API"). */
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

import { endpoint } from '../transport/endpoint';
import type { PageOptions, Paginated } from '../transport/pagination';
import type { Transport } from '../transport/transport';
import { createdSshKeyShape, sshKeyShape } from './shapes';
import type { CreateSshKeyParams, SshKey } from '../types/keys';

/** GitLab's "User SSH and GPG keys API": the caller's SSH keys (`/user/keys`) and another's (`/users/:id/keys`). */
export class SshKeysResource {
  constructor(private readonly transport: Transport) {}

  /** The caller's keys. */
  all(page?: PageOptions<SshKey>): Paginated<SshKey> {
    return this.transport.paginate<SshKey>({ method: 'GET', endpoint: endpoint`user/keys`, shape: sshKeyShape }, page);
  }

  /** Another user's keys, by ID or username. */
  allForUser(user: number | string, page?: PageOptions<SshKey>): Paginated<SshKey> {
    return this.transport.paginate<SshKey>(
      { method: 'GET', endpoint: endpoint`users/${user}/keys`, shape: sshKeyShape },
      page,
    );
  }

  /** One of the caller's keys. */
  show(keyId: number): Promise<SshKey> {
    return this.transport.json<SshKey>({ method: 'GET', endpoint: endpoint`user/keys/${keyId}`, shape: sshKeyShape });
  }

  /** Adds a key for the caller; a rejected key is a ValidationError with `fields` (e.g. `fingerprint`, `key`). */
  create(params: CreateSshKeyParams): Promise<SshKey> {
    return this.transport.json<SshKey>({
      method: 'POST',
      endpoint: endpoint`user/keys`,
      body: params,
      shape: createdSshKeyShape,
    });
  }

  /** Adds a key for another user (administrators only). */
  createForUser(userId: number, params: CreateSshKeyParams): Promise<SshKey> {
    return this.transport.json<SshKey>({
      method: 'POST',
      endpoint: endpoint`users/${userId}/keys`,
      body: params,
      shape: createdSshKeyShape,
    });
  }

  async remove(keyId: number): Promise<void> {
    await this.transport.request<unknown>({ method: 'DELETE', endpoint: endpoint`user/keys/${keyId}` });
  }

  /** Administrators only. */
  async removeForUser(userId: number, keyId: number): Promise<void> {
    await this.transport.request<unknown>({ method: 'DELETE', endpoint: endpoint`users/${userId}/keys/${keyId}` });
  }
}

import { endpoint } from '../transport/endpoint';
import type { PageOptions, Paginated } from '../transport/pagination';
import type { Transport } from '../transport/transport';
import type { CreateGpgKeyParams, GpgKey } from '../types/keys';

/**
 * GitLab's "User SSH and GPG keys API", GPG keys: the caller's own (`/user/gpg_keys`) and another user's
 * (`/users/:id/gpg_keys`). Beyond the caller's list, show and add, they follow the forge and the SSH key endpoints.
 */
export class GpgKeysResource {
  constructor(private readonly transport: Transport) {}

  /** The caller's keys. */
  all(page?: PageOptions<GpgKey>): Paginated<GpgKey> {
    return this.transport.paginate<GpgKey>({ method: 'GET', endpoint: endpoint`user/gpg_keys` }, page);
  }

  /** Another user's keys. */
  allForUser(userId: number, page?: PageOptions<GpgKey>): Paginated<GpgKey> {
    return this.transport.paginate<GpgKey>({ method: 'GET', endpoint: endpoint`users/${userId}/gpg_keys` }, page);
  }

  /** One of the caller's keys. */
  show(keyId: number): Promise<GpgKey> {
    return this.transport.json<GpgKey>({ method: 'GET', endpoint: endpoint`user/gpg_keys/${keyId}` });
  }

  /** One of another user's keys. */
  showForUser(userId: number, keyId: number): Promise<GpgKey> {
    return this.transport.json<GpgKey>({ method: 'GET', endpoint: endpoint`users/${userId}/gpg_keys/${keyId}` });
  }

  /** Adds a key for the caller; a rejected key is a ValidationError with `fields` (e.g. `key`, `fingerprint`). */
  create(params: CreateGpgKeyParams): Promise<GpgKey> {
    return this.transport.json<GpgKey>({ method: 'POST', endpoint: endpoint`user/gpg_keys`, body: params });
  }

  /** Adds a key for another user (administrators only). */
  createForUser(userId: number, params: CreateGpgKeyParams): Promise<GpgKey> {
    return this.transport.json<GpgKey>({ method: 'POST', endpoint: endpoint`users/${userId}/gpg_keys`, body: params });
  }

  async remove(keyId: number): Promise<void> {
    await this.transport.request<unknown>({ method: 'DELETE', endpoint: endpoint`user/gpg_keys/${keyId}` });
  }

  /** Administrators only. */
  async removeForUser(userId: number, keyId: number): Promise<void> {
    await this.transport.request<unknown>({ method: 'DELETE', endpoint: endpoint`users/${userId}/gpg_keys/${keyId}` });
  }
}

import { endpoint } from '../transport/endpoint';
import type { PageOptions, Paginated } from '../transport/pagination';
import type { Transport } from '../transport/transport';
import { accessTokenShape, newPersonalAccessTokenShape } from './shapes';
import type {
  ListPersonalAccessTokensParams,
  NewPersonalAccessToken,
  PersonalAccessToken,
  RotateAccessTokenParams,
} from '../types/tokens';

/**
 * GitLab's "Personal access tokens API" (beyond the API specification). Project and group access tokens are personal
 * access tokens of bot users, so `self` and `rotateSelf` work with them too.
 */
export class PersonalAccessTokensResource {
  constructor(private readonly transport: Transport) {}

  /** The caller's own tokens; an administrator's listing holds every user's (`user_id` narrows it). */
  all(
    params: ListPersonalAccessTokensParams = {},
    page?: PageOptions<PersonalAccessToken>,
  ): Paginated<PersonalAccessToken> {
    return this.transport.paginate<PersonalAccessToken>(
      { method: 'GET', endpoint: endpoint`personal_access_tokens`, query: { ...params }, shape: accessTokenShape },
      page,
    );
  }

  /** Another user's token answers 401 to anyone but an administrator, who gets 404 for one that does not exist. */
  show(tokenId: number): Promise<PersonalAccessToken> {
    return this.transport.json<PersonalAccessToken>({
      method: 'GET',
      endpoint: endpoint`personal_access_tokens/${tokenId}`,
      shape: accessTokenShape,
    });
  }

  /** The token this client authenticates with: its id, scopes and expiry (GitLab 15.5 and later; any scope may ask). */
  self(): Promise<PersonalAccessToken> {
    return this.transport.json<PersonalAccessToken>({
      method: 'GET',
      endpoint: endpoint`personal_access_tokens/self`,
      shape: accessTokenShape,
    });
  }

  /**
   * Revokes the token and answers its successor, value included. Never retried: a repeat would rotate the successor
   * or meet a revoked token. Authenticating this call with a revoked token of the family makes the forge revoke the
   * whole family (its automatic reuse detection).
   */
  rotate(tokenId: number, params: RotateAccessTokenParams = {}): Promise<NewPersonalAccessToken> {
    return this.transport.json<NewPersonalAccessToken>({
      method: 'POST',
      endpoint: endpoint`personal_access_tokens/${tokenId}/rotate`,
      body: params,
      shape: newPersonalAccessTokenShape,
    });
  }

  /** Rotates the token this client authenticates with (`api` or `self_rotate` scope); the client's token is then dead. */
  rotateSelf(params: RotateAccessTokenParams = {}): Promise<NewPersonalAccessToken> {
    return this.transport.json<NewPersonalAccessToken>({
      method: 'POST',
      endpoint: endpoint`personal_access_tokens/self/rotate`,
      body: params,
      shape: newPersonalAccessTokenShape,
    });
  }

  async revoke(tokenId: number): Promise<void> {
    await this.transport.request<unknown>({ method: 'DELETE', endpoint: endpoint`personal_access_tokens/${tokenId}` });
  }
}

import { endpoint } from '../transport/endpoint';
import { ApiError } from '../transport/errors';
import type { PageOptions, Paginated } from '../transport/pagination';
import type { Transport } from '../transport/transport';
import { currentUserShape, userListItemShape, userShape } from './shapes';
import type {
  AdminUser,
  AdminUserListItem,
  CreateUserParams,
  CurrentAdminUser,
  CurrentUser,
  CurrentUserParams,
  EditUserParams,
  EditUserPreferencesParams,
  ListUsersParams,
  PublicUser,
  RemoveUserParams,
  SetUserStatusParams,
  ShowUserParams,
  UserCounts,
  UserPreferences,
  UserStatus,
  UserSummary,
} from '../types/users';

/**
 * GitLab's "Users API". Which view comes back depends on the caller, so results are unions of the normal
 * and administrator views; narrow with `isAdminView`.
 */
export class UsersResource {
  constructor(private readonly transport: Transport) {}

  all(
    params: ListUsersParams = {},
    page?: PageOptions<UserSummary | AdminUserListItem>,
  ): Paginated<UserSummary | AdminUserListItem> {
    return this.transport.paginate<UserSummary | AdminUserListItem>(
      { method: 'GET', endpoint: endpoint`users`, query: { ...params }, shape: userListItemShape },
      page,
    );
  }

  show(userId: number, params: ShowUserParams = {}): Promise<PublicUser | AdminUser> {
    return this.transport.json<PublicUser | AdminUser>({
      method: 'GET',
      endpoint: endpoint`users/${userId}`,
      query: { ...params },
      shape: userShape,
    });
  }

  /** `GET /user`. */
  current(params: CurrentUserParams = {}): Promise<CurrentUser | CurrentAdminUser> {
    return this.transport.json<CurrentUser | CurrentAdminUser>({
      method: 'GET',
      endpoint: endpoint`user`,
      query: { ...params },
      shape: currentUserShape,
    });
  }

  /** `POST /users` (administrators); the administrator view of the new user. Taken email/username → ConflictError. */
  create(params: CreateUserParams): Promise<AdminUser> {
    return this.transport.json<AdminUser>({ method: 'POST', endpoint: endpoint`users`, body: { ...params } });
  }

  /** `PUT /users/:id` (administrators). The forge answers a conflicting email with 404 (NotFoundError). */
  edit(userId: number, params: EditUserParams): Promise<AdminUser> {
    return this.transport.json<AdminUser>({ method: 'PUT', endpoint: endpoint`users/${userId}`, body: { ...params } });
  }

  /** `DELETE /users/:id` (administrators); ConflictError when the user solely owns a group and not `hard_delete`. */
  async remove(userId: number, params: RemoveUserParams = {}): Promise<void> {
    await this.transport.request<unknown>({
      method: 'DELETE',
      endpoint: endpoint`users/${userId}`,
      query: { ...params },
    });
  }

  /** `DELETE /users/:id/identities/:provider` (administrators). */
  async removeIdentity(userId: number, provider: string): Promise<void> {
    await this.transport.request<unknown>({
      method: 'DELETE',
      endpoint: endpoint`users/${userId}/identities/${provider}`,
    });
  }

  /** `GET /user/status`, or another user's (`GET /users/:id_or_username/status`) when `user` is given. */
  status(user?: number | string): Promise<UserStatus> {
    return this.transport.json<UserStatus>({
      method: 'GET',
      endpoint: user === undefined ? endpoint`user/status` : endpoint`users/${user}/status`,
    });
  }

  /** `PUT /user/status`. */
  setStatus(params: SetUserStatusParams): Promise<UserStatus> {
    return this.transport.json<UserStatus>({ method: 'PUT', endpoint: endpoint`user/status`, body: { ...params } });
  }

  /** `PUT /user/preferences`. */
  editPreferences(params: EditUserPreferencesParams): Promise<UserPreferences> {
    return this.transport.json<UserPreferences>({
      method: 'PUT',
      endpoint: endpoint`user/preferences`,
      body: { ...params },
    });
  }

  /** `POST /users/:id/follow`: the followed user, or `undefined` when nothing changed (304: already followed, self). */
  follow(userId: number): Promise<UserSummary | undefined> {
    return this.notModifiedAsUndefined(endpoint`users/${userId}/follow`);
  }

  /** `POST /users/:id/unfollow`: the user, or `undefined` when not followed (304). */
  unfollow(userId: number): Promise<UserSummary | undefined> {
    return this.notModifiedAsUndefined(endpoint`users/${userId}/unfollow`);
  }

  followers(userId: number, page?: PageOptions<UserSummary>): Paginated<UserSummary> {
    return this.transport.paginate<UserSummary>({ method: 'GET', endpoint: endpoint`users/${userId}/followers` }, page);
  }

  following(userId: number, page?: PageOptions<UserSummary>): Paginated<UserSummary> {
    return this.transport.paginate<UserSummary>({ method: 'GET', endpoint: endpoint`users/${userId}/following` }, page);
  }

  /** `GET /user_counts`. */
  counts(): Promise<UserCounts> {
    return this.transport.json<UserCounts>({ method: 'GET', endpoint: endpoint`user_counts` });
  }

  private async notModifiedAsUndefined(path: ReturnType<typeof endpoint>): Promise<UserSummary | undefined> {
    try {
      return await this.transport.json<UserSummary>({ method: 'POST', endpoint: path });
    } catch (error) {
      if (error instanceof ApiError && error.status === 304) return undefined;
      throw error;
    }
  }
}

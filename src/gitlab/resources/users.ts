import { endpoint } from '../transport/endpoint';
import type { PageOptions, Paginated } from '../transport/pagination';
import type { Transport } from '../transport/transport';
import type {
  AdminUser,
  AdminUserListItem,
  CurrentAdminUser,
  CurrentUser,
  CurrentUserParams,
  ListUsersParams,
  PublicUser,
  ShowUserParams,
  UserSummary,
} from '../types/users';

/**
 * Spec 02 §4, users (read side). Which view comes back depends on the caller, so results are unions of the normal
 * and administrator views; narrow with `isAdminView`.
 */
export class UsersResource {
  constructor(private readonly transport: Transport) {}

  all(
    params: ListUsersParams = {},
    page?: PageOptions<UserSummary | AdminUserListItem>,
  ): Paginated<UserSummary | AdminUserListItem> {
    return this.transport.paginate<UserSummary | AdminUserListItem>(
      { method: 'GET', endpoint: endpoint`users`, query: { ...params } },
      page,
    );
  }

  show(userId: number, params: ShowUserParams = {}): Promise<PublicUser | AdminUser> {
    return this.transport.json<PublicUser | AdminUser>({
      method: 'GET',
      endpoint: endpoint`users/${userId}`,
      query: { ...params },
    });
  }

  /** `GET /user`. */
  current(params: CurrentUserParams = {}): Promise<CurrentUser | CurrentAdminUser> {
    return this.transport.json<CurrentUser | CurrentAdminUser>({
      method: 'GET',
      endpoint: endpoint`user`,
      query: { ...params },
    });
  }
}

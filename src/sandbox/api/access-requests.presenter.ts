import type { AccessRequestRecord } from '../state';
import { Presenter } from './presenter';

/** An access request as the forge's Group and project access requests API shows it; an approved one is a member. */
export class AccessRequestPresenter extends Presenter {
  /** The user who asked (what the request kept of them, once they are gone) and when. */
  accessRequest(request: AccessRequestRecord): Record<string, unknown> {
    const user = this.state.users.get(request.user_id);
    return {
      ...(user
        ? this.userSummary(user)
        : { id: request.user_id, username: request.username, state: request.user_state }),
      created_at: request.requested_at,
      requested_at: request.requested_at,
    };
  }
}

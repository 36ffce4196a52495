import type { UserRecord } from '../state';
import { Presenter } from './presenter';

/** The views of a user (the forge's Users API): as everyone sees them, as an administrator sees them, and oneself. */
export class UserPresenter extends Presenter {
  /** `GET /users/:id` for a normal caller. */
  userPublic(user: UserRecord): Record<string, unknown> {
    return {
      ...this.userSummary(user),
      created_at: user.created_at,
      ...profileFields(user),
      followers: this.state.userWrites.followers(user.id).length,
      following: this.state.userWrites.following(user.id).length,
    };
  }

  /** The administrator's view of the user list. */
  userAdminListItem(user: UserRecord, withCustomAttributes = false): Record<string, unknown> {
    const signedIn = user.current_sign_in_at !== null;
    return {
      ...this.userSummary(user),
      email: user.email,
      created_at: user.created_at,
      is_admin: user.is_admin,
      ...profileFields(user),
      last_sign_in_at: user.last_sign_in_at,
      confirmed_at: user.confirmed_at,
      theme_id: 1,
      last_activity_on: user.last_activity_on,
      color_scheme_id: 1,
      projects_limit: user.projects_limit,
      current_sign_in_at: user.current_sign_in_at,
      note: user.note,
      identities: user.identities,
      can_create_group: user.can_create_group,
      can_create_project: user.can_create_project,
      two_factor_enabled: user.two_factor_enabled,
      external: user.external,
      private_profile: user.private_profile,
      current_sign_in_ip: signedIn ? '127.0.0.1' : null,
      last_sign_in_ip: user.last_sign_in_at !== null ? '127.0.0.1' : null,
      ...(withCustomAttributes ? { custom_attributes: customAttributes(user) } : {}),
    };
  }

  userAdminSingle(user: UserRecord, withCustomAttributes = false): Record<string, unknown> {
    return {
      ...this.userPublic(user),
      ...this.userAdminListItem(user, withCustomAttributes),
      commit_email: user.email,
      sign_in_count: user.last_sign_in_at !== null ? 1 : 0,
    };
  }

  /** `GET /user`: the caller's own view, with the administrator's fields for an administrator. */
  currentUser(user: UserRecord): Record<string, unknown> {
    const view: Record<string, unknown> = {
      ...this.userPublic(user),
      email: user.email,
      public_email: user.public_email,
      last_sign_in_at: user.last_sign_in_at,
      confirmed_at: user.confirmed_at,
      theme_id: 1,
      last_activity_on: user.last_activity_on,
      color_scheme_id: 1,
      projects_limit: user.projects_limit,
      current_sign_in_at: user.current_sign_in_at,
      identities: user.identities,
      can_create_group: user.can_create_group,
      can_create_project: user.can_create_project,
      two_factor_enabled: user.two_factor_enabled,
      external: user.external,
      private_profile: user.private_profile,
    };
    if (!user.is_admin) return view;
    return {
      ...view,
      is_admin: true,
      job_title: user.job_title,
      commit_email: user.email,
      current_sign_in_ip: user.current_sign_in_at !== null ? '127.0.0.1' : null,
      last_sign_in_ip: user.last_sign_in_at !== null ? '127.0.0.1' : null,
    };
  }
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function customAttributes(user: UserRecord): { key: string; value: string }[] {
  return Object.entries(user.custom_attributes).map(([key, value]) => ({ key, value }));
}

/** The profile a user shows to everyone, the same in the public and the administrator views. */
function profileFields(user: UserRecord): Record<string, unknown> {
  return {
    bio: user.bio,
    bio_html: user.bio ? `<p dir="auto">${escapeHtml(user.bio)}</p>` : '',
    bot: user.user_type !== 'human',
    location: user.location,
    public_email: user.public_email,
    skype: user.skype,
    linkedin: user.linkedin,
    twitter: user.twitter,
    website_url: user.website_url,
    organization: user.organization,
    job_title: user.job_title,
  };
}

import type { ClearStatusAfter } from '../../gitlab/types/users';
import {
  ApiError,
  boolParam,
  enumParam,
  forbidden,
  intParam,
  intRouteParam,
  noContent,
  notFound,
  ok,
  param,
  paramError,
  requiredParam,
  validationError,
  type RequestContext,
} from '../http/context';
import type { Router } from '../http/router';
import { deleteUserAsAdministrator, SOLE_OWNER_MESSAGE } from '../removal';
import type { SandboxState, UserRecord } from '../state';
import { CLEAR_STATUS_AFTER, type UserStatusRecord } from '../user-writes-state';
import { currentUser, requireAdmin } from './access';
import { UserPresenter } from './users.presenter';

const DEFAULT_EMOJI = 'speech_balloon';
const MIN_PASSWORD = 8;
const USERNAME = /^[a-zA-Z0-9_.][a-zA-Z0-9_.-]*$/;

/**
 * GitLab's "Users API", the write side and the current user's status, preferences and follows; blocking and unblocking
 * (GitLab's Users API): a blocked user's tokens are refused from the next request on (`http/server.ts`).
 */
export function registerUserWriteRoutes(router: Router): void {
  router
    .post('/users', (ctx) => {
      requireAdmin(ctx);
      const user = createUser(ctx);
      return ok(new UserPresenter(ctx.state, ctx.baseUrl).userAdminSingle(user), 201);
    })
    .put('/users/:id', (ctx) => {
      requireAdmin(ctx);
      const user = ctx.state.users.get(intRouteParam(ctx, 'id'));
      if (!user) throw notFound('User');
      updateUser(ctx, user);
      return ok(new UserPresenter(ctx.state, ctx.baseUrl).userAdminSingle(user));
    })
    .post('/users/:id/block', (ctx) => {
      const caller = requireAdmin(ctx);
      const user = ctx.state.users.get(intRouteParam(ctx, 'id'));
      if (!user) throw notFound('User');
      if (user.id === caller.id) throw forbidden('The API initiating user cannot be blocked by the API');
      // Blocking a blocked user leaves the endpoint early (`break`): Grape answers 201 with a null body.
      if (user.state === 'blocked') return ok(null, 201);
      user.state = 'blocked';
      return ok(true, 201);
    })
    .post('/users/:id/unblock', (ctx) => {
      requireAdmin(ctx);
      const user = ctx.state.users.get(intRouteParam(ctx, 'id'));
      if (!user) throw notFound('User');
      // `user.activate`: false when there is nothing to activate.
      const wasBlocked = user.state === 'blocked';
      user.state = 'active';
      return ok(wasBlocked, 201);
    })
    .delete('/users/:id/identities/:provider', (ctx) => {
      requireAdmin(ctx);
      const user = ctx.state.users.get(intRouteParam(ctx, 'id'));
      if (!user) throw notFound('User');
      const provider = ctx.params.provider ?? '';
      const index = user.identities.findIndex((i) => i.provider === provider);
      if (index < 0) throw notFound('Identity');
      user.identities.splice(index, 1);
      return noContent();
    })
    .delete('/users/:id', (ctx) => {
      requireAdmin(ctx);
      const user = ctx.state.users.get(intRouteParam(ctx, 'id'));
      if (!user) throw notFound('User');
      if (!deleteUserAsAdministrator(ctx.state, user, boolParam(ctx, 'hard_delete') ?? false)) {
        throw new ApiError(409, { message: SOLE_OWNER_MESSAGE });
      }
      return noContent();
    })
    .get('/user/status', (ctx) => ok(presentStatus(ctx, currentUser(ctx))))
    .get('/users/:id_or_username/status', (ctx) => {
      currentUser(ctx);
      const ref = ctx.params.id_or_username ?? '';
      const user = /^\d+$/.test(ref) ? ctx.state.users.get(Number(ref)) : ctx.state.userByUsername(ref);
      if (!user) throw notFound('User');
      return ok(presentStatus(ctx, user));
    })
    .put('/user/status', (ctx) => {
      const user = currentUser(ctx);
      const after = enumParam(ctx, 'clear_status_after', Object.keys(CLEAR_STATUS_AFTER) as ClearStatusAfter[]);
      const emoji = param(ctx, 'emoji') ?? '';
      const message = param(ctx, 'message') ?? '';
      const availability = enumParam(ctx, 'availability', ['not_set', 'busy'] as const) ?? 'not_set';
      if (emoji === '' && message === '') {
        ctx.state.userWrites.statuses.delete(user.id);
      } else {
        const record: UserStatusRecord = {
          emoji: emoji || DEFAULT_EMOJI,
          message,
          availability,
          // Omitting `clear_status_after` clears the previously set value.
          clear_status_at: after ? new Date(ctx.state.clock.now() + CLEAR_STATUS_AFTER[after]).toISOString() : null,
        };
        ctx.state.userWrites.statuses.set(user.id, record);
      }
      return ok(presentStatus(ctx, user));
    })
    .put('/user/preferences', (ctx) => {
      const user = currentUser(ctx);
      const value = boolParam(ctx, 'view_diffs_file_by_file');
      if (value === undefined) throw paramError('view_diffs_file_by_file is missing');
      const prefs = ctx.state.userWrites.preferencesOf(user.id);
      prefs.view_diffs_file_by_file = value;
      return ok({ ...prefs });
    })
    .post('/users/:id/follow', (ctx) => {
      const caller = currentUser(ctx);
      const user = ctx.state.users.get(intRouteParam(ctx, 'id'));
      if (!user) throw notFound('User');
      if (!ctx.state.userWrites.follow(caller.id, user.id)) return { status: 304 };
      return ok(new UserPresenter(ctx.state, ctx.baseUrl).userSummary(user), 201);
    })
    .post('/users/:id/unfollow', (ctx) => {
      const caller = currentUser(ctx);
      const user = ctx.state.users.get(intRouteParam(ctx, 'id'));
      if (!user) throw notFound('User');
      if (!ctx.state.userWrites.unfollow(caller.id, user.id)) return { status: 304 };
      return ok(new UserPresenter(ctx.state, ctx.baseUrl).userSummary(user), 201);
    })
    .get('/users/:id/followers', (ctx) => followList(ctx, 'followers'))
    .get('/users/:id/following', (ctx) => followList(ctx, 'following'))
    .get('/user_counts', (ctx) => {
      currentUser(ctx);
      // Merge requests carry no assignees in the sandbox, so none is assigned to the caller.
      return ok({ merge_requests: 0 });
    });
}

function followList(ctx: RequestContext, which: 'followers' | 'following') {
  currentUser(ctx);
  const user = ctx.state.users.get(intRouteParam(ctx, 'id'));
  if (!user) throw notFound('User');
  const ids = which === 'followers' ? ctx.state.userWrites.followers(user.id) : ctx.state.userWrites.following(user.id);
  const presenter = new UserPresenter(ctx.state, ctx.baseUrl);
  return ok(
    ids
      .map((id) => ctx.state.users.get(id))
      .filter((u): u is UserRecord => u !== undefined)
      .map((u) => presenter.userSummary(u)),
  );
}

function presentStatus(ctx: RequestContext, user: UserRecord): Record<string, unknown> {
  const status = ctx.state.userWrites.status(user.id, ctx.state.clock.now());
  if (!status) return { emoji: null, availability: 'not_set', message: null, message_html: '', clear_status_at: null };
  return {
    emoji: status.emoji,
    availability: status.availability,
    message: status.message,
    message_html: escapeHtml(status.message),
    clear_status_at: status.clear_status_at,
  };
}

function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

// ---- create and update ----------------------------------------------------------------------------------------

const STRING_FIELDS = [
  'bio',
  'linkedin',
  'location',
  'note',
  'organization',
  'skype',
  'twitter',
  'website_url',
  'job_title',
] as const;

function createUser(ctx: RequestContext): UserRecord {
  const state = ctx.state;
  const email = requiredParam(ctx, 'email');
  const name = requiredParam(ctx, 'name');
  const username = requiredParam(ctx, 'username');
  const password = param(ctx, 'password');
  const reset = boolParam(ctx, 'reset_password') ?? false;
  const random = boolParam(ctx, 'force_random_password') ?? false;
  if (!reset && !random && (password === undefined || password === '')) {
    throw paramError(
      'password, reset_password, force_random_password are missing, at least one parameter must be provided',
    );
  }
  if (!reset && !random) checkPassword(password ?? '');
  checkEmailAndUsername(email, username);
  if (emailTaken(state, email)) throw new ApiError(409, { message: 'Email has already been taken' });
  if (state.userByUsername(username)) throw new ApiError(409, { message: 'Username has already been taken' });

  const now = state.nowIso();
  const user: UserRecord = {
    id: state.nextId('user'),
    username,
    name,
    email,
    is_admin: boolParam(ctx, 'admin') ?? false,
    state: 'active',
    two_factor_enabled: false,
    external: boolParam(ctx, 'external') ?? false,
    user_type: 'human',
    confirmed_at: (boolParam(ctx, 'skip_confirmation') ?? false) ? now : null,
    created_at: now,
    last_sign_in_at: null,
    current_sign_in_at: null,
    last_activity_on: null,
    bio: '',
    location: null,
    public_email: '',
    organization: '',
    job_title: '',
    skype: '',
    linkedin: '',
    twitter: '',
    website_url: '',
    note: null,
    identities: [],
    custom_attributes: {},
    projects_limit: 100000,
    can_create_group: true,
    can_create_project: true,
    private_profile: false,
    namespace_id: state.nextId('namespace'),
  };
  applyCommonFields(ctx, user);
  state.users.set(user.id, user);
  return user;
}

function updateUser(ctx: RequestContext, user: UserRecord): void {
  const state = ctx.state;
  const email = param(ctx, 'email');
  const username = param(ctx, 'username');
  const name = param(ctx, 'name');
  checkEmailAndUsername(email, username);
  // The forge answers a conflicting email or username on update with 404 (docs/api-client.md, "Users").
  if (email !== undefined && emailTaken(state, email, user.id)) throw notFound('User');
  const other = username !== undefined ? state.userByUsername(username) : undefined;
  if (other && other.id !== user.id) throw notFound('User');
  const password = param(ctx, 'password');
  if (password !== undefined) checkPassword(password);
  const publicEmail = param(ctx, 'public_email');
  const newEmail = email ?? user.email;
  if (publicEmail !== undefined && publicEmail !== '' && publicEmail.toLowerCase() !== newEmail.toLowerCase()) {
    throw validationError({ public_email: ['is not an email you own'] });
  }
  if (name !== undefined) {
    if (name === '') throw validationError({ name: ["can't be blank"] });
    user.name = name;
  }
  if (email !== undefined) user.email = email;
  if (username !== undefined) user.username = username;
  if (publicEmail !== undefined) user.public_email = publicEmail;
  const admin = boolParam(ctx, 'admin');
  if (admin !== undefined) user.is_admin = admin;
  const external = boolParam(ctx, 'external');
  if (external !== undefined) user.external = external;
  applyCommonFields(ctx, user);
}

/** Fields create and update share, applied only when given. */
function applyCommonFields(ctx: RequestContext, user: UserRecord): void {
  for (const field of STRING_FIELDS) {
    const value = param(ctx, field);
    if (value !== undefined) user[field] = value;
  }
  const projectsLimit = intParam(ctx, 'projects_limit');
  if (projectsLimit !== undefined) {
    if (projectsLimit < 0) throw validationError({ projects_limit: ['must be greater than or equal to 0'] });
    user.projects_limit = projectsLimit;
  }
  const canCreateGroup = boolParam(ctx, 'can_create_group');
  if (canCreateGroup !== undefined) user.can_create_group = canCreateGroup;
  // `null` is converted to false, as the forge does on create.
  if (ctx.body.private_profile === null) user.private_profile = false;
  const privateProfile = boolParam(ctx, 'private_profile');
  if (privateProfile !== undefined) user.private_profile = privateProfile;
  const provider = param(ctx, 'provider');
  const externUid = param(ctx, 'extern_uid');
  if (provider && externUid) {
    const existing = user.identities.find((i) => i.provider === provider);
    if (existing) existing.extern_uid = externUid;
    else user.identities.push({ provider, extern_uid: externUid });
  }
  const viewDiffs = boolParam(ctx, 'view_diffs_file_by_file');
  if (viewDiffs !== undefined) ctx.state.userWrites.preferencesOf(user.id).view_diffs_file_by_file = viewDiffs;
}

function checkPassword(password: string): void {
  if (password.length < MIN_PASSWORD) {
    throw validationError({ password: [`is too short (minimum is ${MIN_PASSWORD} characters)`] });
  }
}

function checkEmailAndUsername(email: string | undefined, username: string | undefined): void {
  const fields: Record<string, string[]> = {};
  if (email !== undefined && !/^[^@\s]+@[^@\s]+$/.test(email)) fields.email = ['is invalid'];
  if (username !== undefined && !USERNAME.test(username)) {
    fields.username = ["can contain only letters, digits, '_', '-' and '.'. Cannot start with '-'"];
  }
  if (Object.keys(fields).length > 0) throw validationError(fields);
}

function emailTaken(state: SandboxState, email: string, exceptId?: number): boolean {
  const lower = email.toLowerCase();
  for (const u of state.users.values()) if (u.id !== exceptId && u.email.toLowerCase() === lower) return true;
  return false;
}

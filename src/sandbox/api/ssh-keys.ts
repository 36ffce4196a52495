import {
  intRouteParam,
  noContent,
  notFound,
  ok,
  param,
  paramError,
  timestampParam,
  validationError,
  type RequestContext,
} from '../http/context';
import { paginate } from '../http/pagination';
import type { Router } from '../http/router';
import { parseSshPublicKey, type ParsedSshKey } from '../ssh-key';
import type { SshKeyRecord, UserRecord } from '../state';
import { currentUser, requireAdmin } from './access';
import { Presenter } from './presenter';

/** The forge's model errors for key text it cannot read, on the fields `fingerprint` and `key`. */
export const KEY_TYPE_FORBIDDEN = 'type is forbidden. Must be RSA, DSA, ECDSA, ED25519, ECDSA_SK, or ED25519_SK';
export const FINGERPRINT_NOT_GENERATED = 'cannot be generated';
export const FINGERPRINT_TAKEN = 'has already been taken';

/** SSH keys of the caller and of other users (GitLab's "User SSH and GPG keys API"). */
export function registerSshKeyRoutes(router: Router): void {
  router
    .get('/user/keys', (ctx) => {
      const user = currentUser(ctx);
      return paginate(ctx, keysOf(ctx, user), (k) => present(ctx).sshKey(k));
    })
    .get('/user/keys/:key_id', (ctx) => ok(present(ctx).sshKey(findKey(ctx, currentUser(ctx)))))
    .post('/user/keys', (ctx) => ok(present(ctx).sshKey(createKey(ctx, currentUser(ctx))), 201))
    .delete('/user/keys/:key_id', (ctx) => {
      ctx.state.sshKeys.delete(findKey(ctx, currentUser(ctx)).id);
      return noContent();
    })
    .get('/users/:id/keys', (ctx) => {
      currentUser(ctx);
      const user = findUserByIdOrUsername(ctx);
      return paginate(ctx, keysOf(ctx, user), (k) => present(ctx).sshKey(k));
    })
    .get('/users/:id/keys/:key_id', (ctx) => {
      currentUser(ctx);
      return ok(present(ctx).sshKey(findKey(ctx, findUserByIdOrUsername(ctx))));
    })
    .post('/users/:id/keys', (ctx) => {
      requireAdmin(ctx);
      const user = ctx.state.users.get(intRouteParam(ctx, 'id'));
      if (!user) throw notFound('User');
      return ok(present(ctx).sshKey(createKey(ctx, user)), 201);
    })
    .delete('/users/:id/keys/:key_id', (ctx) => {
      requireAdmin(ctx);
      const user = ctx.state.users.get(intRouteParam(ctx, 'id'));
      if (!user) throw notFound('User');
      ctx.state.sshKeys.delete(findKey(ctx, user).id);
      return noContent();
    });
}

/** Parses key text as the forge validates it; `prefix` names nested fields (`deploy_key.` for deploy keys). */
export function validateKeyText(text: string, prefix = ''): ParsedSshKey {
  const parsed = parseSshPublicKey(text);
  if (!parsed) {
    throw validationError({
      [`${prefix}key`]: [KEY_TYPE_FORBIDDEN],
      [`${prefix}fingerprint`]: [FINGERPRINT_NOT_GENERATED],
    });
  }
  return parsed;
}

/** Grape reports every missing required parameter at once: `title is missing, key is missing`. */
export function requireParams(ctx: RequestContext, names: string[]): Record<string, string> {
  const values: Record<string, string> = {};
  const missing: string[] = [];
  for (const name of names) {
    const value = param(ctx, name);
    if (value === undefined || value === '') missing.push(`${name} is missing`);
    else values[name] = value;
  }
  if (missing.length > 0) throw paramError(missing.join(', '));
  return values;
}

function createKey(ctx: RequestContext, user: UserRecord): SshKeyRecord {
  const { title, key } = requireParams(ctx, ['title', 'key']);
  const expiresAt = timestampParam(ctx, 'expires_at') ?? null;
  const parsed = validateKeyText(key);
  if (ctx.state.keyWithFingerprint(parsed.fingerprintSha256)) {
    throw validationError({ fingerprint: [FINGERPRINT_TAKEN] });
  }
  const record: SshKeyRecord = {
    id: ctx.state.nextId('key'),
    user_id: user.id,
    title,
    key: key.trim(),
    normalized: parsed.normalized,
    fingerprint: parsed.fingerprintMd5,
    fingerprint_sha256: parsed.fingerprintSha256,
    created_at: ctx.state.nowIso(),
    expires_at: expiresAt,
  };
  ctx.state.sshKeys.set(record.id, record);
  return record;
}

function keysOf(ctx: RequestContext, user: UserRecord): SshKeyRecord[] {
  return [...ctx.state.sshKeys.values()].filter((k) => k.user_id === user.id).sort((a, b) => a.id - b.id);
}

function findKey(ctx: RequestContext, user: UserRecord): SshKeyRecord {
  const key = ctx.state.sshKeys.get(intRouteParam(ctx, 'key_id'));
  if (!key || key.user_id !== user.id) throw notFound('Key');
  return key;
}

/** `:id_or_username`: a numeric id, else a username. */
function findUserByIdOrUsername(ctx: RequestContext): UserRecord {
  const ref = ctx.params.id ?? '';
  const user = /^\d+$/.test(ref) ? ctx.state.users.get(Number(ref)) : ctx.state.userByUsername(ref);
  if (!user) throw notFound('User');
  return user;
}

function present(ctx: RequestContext): Presenter {
  return new Presenter(ctx.state, ctx.baseUrl);
}

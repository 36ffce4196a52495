import { intRouteParam, noContent, notFound, ok, validationError, type RequestContext } from '../http/context';
import { paginate } from '../http/pagination';
import type { Router } from '../http/router';
import { GPG_BLANK, GPG_KEY_INVALID, parseGpgPublicKey } from '../gpg-key';
import type { GpgKeyRecord, UserRecord } from '../state';
import { currentUser, requireAdmin } from './access';
import { FINGERPRINT_TAKEN, requireParams } from './ssh-keys';

/**
 * GPG keys of the caller and of other users (GitLab's "User SSH and GPG keys API"). Beyond the caller's list, show
 * and add, another user's keys and deletion follow the forge: reading another user's keys needs only
 * authentication, adding or deleting them needs an administrator.
 */
export function registerGpgKeyRoutes(router: Router): void {
  router
    .get('/user/gpg_keys', (ctx) => {
      const user = currentUser(ctx);
      return paginate(ctx, keysOf(ctx, user), presentGpgKey);
    })
    .get('/user/gpg_keys/:key_id', (ctx) => ok(presentGpgKey(findKey(ctx, currentUser(ctx)))))
    .post('/user/gpg_keys', (ctx) => ok(presentGpgKey(createKey(ctx, currentUser(ctx))), 201))
    .delete('/user/gpg_keys/:key_id', (ctx) => {
      ctx.state.gpgKeys.delete(findKey(ctx, currentUser(ctx)).id);
      return noContent();
    })
    .get('/users/:id/gpg_keys', (ctx) => {
      currentUser(ctx);
      return paginate(ctx, keysOf(ctx, findUser(ctx)), presentGpgKey);
    })
    .get('/users/:id/gpg_keys/:key_id', (ctx) => {
      currentUser(ctx);
      return ok(presentGpgKey(findKey(ctx, findUser(ctx))));
    })
    .post('/users/:id/gpg_keys', (ctx) => {
      requireAdmin(ctx);
      return ok(presentGpgKey(createKey(ctx, findUser(ctx))), 201);
    })
    .delete('/users/:id/gpg_keys/:key_id', (ctx) => {
      requireAdmin(ctx);
      ctx.state.gpgKeys.delete(findKey(ctx, findUser(ctx)).id);
      return noContent();
    });
}

/** Minimal validation: armor lines (`key`), a decodable body (`primary_keyid`, `fingerprint`), no duplicate. */
function createKey(ctx: RequestContext, user: UserRecord): GpgKeyRecord {
  const { key } = requireParams(ctx, ['key']);
  const parsed = parseGpgPublicKey(key);
  if (parsed === 'armor') throw validationError({ key: [GPG_KEY_INVALID] });
  if (parsed === 'body') throw validationError({ primary_keyid: [GPG_BLANK], fingerprint: [GPG_BLANK] });
  if (ctx.state.gpgKeyWithFingerprint(parsed.fingerprint)) throw validationError({ fingerprint: [FINGERPRINT_TAKEN] });
  const record: GpgKeyRecord = {
    id: ctx.state.nextId('gpgKey'),
    user_id: user.id,
    key: key.trim(),
    fingerprint: parsed.fingerprint,
    primary_keyid: parsed.primaryKeyId,
    created_at: ctx.state.nowIso(),
  };
  ctx.state.gpgKeys.set(record.id, record);
  return record;
}

function keysOf(ctx: RequestContext, user: UserRecord): GpgKeyRecord[] {
  return [...ctx.state.gpgKeys.values()].filter((k) => k.user_id === user.id).sort((a, b) => a.id - b.id);
}

function findKey(ctx: RequestContext, user: UserRecord): GpgKeyRecord {
  const key = ctx.state.gpgKeys.get(intRouteParam(ctx, 'key_id'));
  if (!key || key.user_id !== user.id) throw notFound('GPG Key');
  return key;
}

function findUser(ctx: RequestContext): UserRecord {
  const user = ctx.state.users.get(intRouteParam(ctx, 'id'));
  if (!user) throw notFound('User');
  return user;
}

/** The forge's GPG key entity: only `id`, `key` and `created_at`. */
function presentGpgKey(key: GpgKeyRecord): Record<string, unknown> {
  return { id: key.id, key: key.key, created_at: key.created_at };
}

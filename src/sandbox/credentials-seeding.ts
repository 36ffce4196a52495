import type { AccessTokensState } from './access-tokens-state';
import type { CiVariablesState } from './ci-variables-state';
import type { DeployTokensState } from './deploy-tokens-state';
import type { PeopleState, SourceKind } from './people-state';
import type { WorldSeeding } from './seeding';
import type { ParsedWorld } from './world';
import type { WorldCredentials, WorldUserToken } from './world/credentials';

/** A seeded group or project with the credentials its world entry gives. */
export interface SeededPlace {
  readonly source: SourceKind;
  readonly world: WorldCredentials;
  readonly record: { readonly id: number; readonly created_at: string };
}

/**
 * Seeds the world's credentials, after its users, groups and projects: each user's tokens, then per group and project
 * its access tokens (with their bot users), deploy tokens and variables.
 */
export function seedCredentials(
  world: ParsedWorld,
  places: readonly SeededPlace[],
  areas: {
    people: PeopleState;
    accessTokens: AccessTokensState;
    deployTokens: DeployTokensState;
    ciVariables: CiVariablesState;
  },
  seeding: WorldSeeding,
): void {
  const { ids } = seeding;
  world.users.forEach((u) => u.tokens.forEach((t) => typeof t !== 'string' && ids.reserve('accessToken', t.id)));
  places.forEach((p) => p.world.access_tokens.forEach((t) => ids.reserve('accessToken', t.id)));
  places.forEach((p) => p.world.deploy_tokens.forEach((t) => ids.reserve('deployToken', t.id)));
  const day = (value: string | null | undefined): string | null =>
    value === undefined || value === null ? null : seeding.time(value).slice(0, 10);

  for (const u of world.users) {
    const user = areas.people.userByUsername(u.username);
    if (!user) continue;
    u.tokens.forEach((t: WorldUserToken, n) => {
      const token: Exclude<WorldUserToken, string> =
        typeof t === 'string' ? { token: t, scopes: ['api'], revoked: false } : t;
      areas.accessTokens.add({
        id: token.id ?? ids.next('accessToken'),
        user_id: user.id,
        name: token.name ?? `${user.username}-token-${n + 1}`,
        description: token.description ?? null,
        scopes: [...token.scopes],
        created_at: token.created_at !== undefined ? seeding.time(token.created_at) : user.created_at,
        expires_at: day(token.expires_at),
        revoked: token.revoked,
        last_used_at: token.last_used_at ? seeding.time(token.last_used_at) : null,
        previous_id: null,
        value: token.token,
      });
    });
  }

  for (const { source, world: credentials, record } of places) {
    const place = { source, source_id: record.id };
    for (const t of credentials.access_tokens) {
      const createdAt = t.created_at ? seeding.time(t.created_at) : record.created_at;
      const bot = areas.accessTokens.addBot(
        place,
        t.name,
        t.access_level,
        { user: ids.next('user'), namespace: ids.next('namespace') },
        createdAt,
        t.username,
      );
      areas.accessTokens.add({
        id: t.id ?? ids.next('accessToken'),
        user_id: bot.id,
        name: t.name,
        description: t.description ?? null,
        scopes: [...t.scopes],
        created_at: createdAt,
        expires_at: day(t.expires_at),
        revoked: t.revoked,
        last_used_at: t.last_used_at ? seeding.time(t.last_used_at) : null,
        previous_id: null,
        value: t.token,
      });
    }
    for (const t of credentials.deploy_tokens) {
      const id = t.id ?? ids.next('deployToken');
      areas.deployTokens.add({
        id,
        ...place,
        name: t.name,
        username: t.username ?? `gitlab+deploy-token-${id}`,
        scopes: [...t.scopes],
        created_at: t.created_at ? seeding.time(t.created_at) : record.created_at,
        expires_at: t.expires_at === undefined || t.expires_at === null ? null : seeding.time(t.expires_at),
        revoked: t.revoked,
        value: t.token,
      });
    }
    for (const v of credentials.variables) {
      areas.ciVariables.add({ id: areas.ciVariables.nextId(), ...place, ...v, masked: v.masked || v.hidden });
    }
  }
}

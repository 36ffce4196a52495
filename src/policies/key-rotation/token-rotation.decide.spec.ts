import { SKIP } from '../../engine/policy';
import { keyRotationPolicy } from './key-rotation.schema';
import { TOKEN_KINDS } from './kinds';
import type { ListedToken, TokenListing } from './token-kind';
import {
  CLOSE_TOKEN_ROTATION,
  decideTokens,
  DELIVER_TOKEN,
  ISSUE_TOKEN,
  REVOKE_OLD_TOKEN,
  type TokenSettings,
  type TokenSnapshot,
  tokenDue,
} from './token-rotation.decide';
import type { TokenRecord } from './token-rotation.record';

const NOW = new Date('2025-06-02T12:00:00Z');
const DAY = 86_400_000;
const API = { ref: 'acme/api', label: 'project acme/api' };

function config(entry: Record<string, unknown> = {}, section = 'project_access_tokens'): TokenSettings {
  return keyRotationPolicy.schema.parse({
    name: 'rotate',
    type: 'key_rotation',
    interval: '1h',
    secrets_dir: '/keys',
    [section]: [
      {
        ...(section === 'personal_access_tokens' ? {} : { projects: ['acme/api'] }),
        names: ['^deploy'],
        before_expiry: '14d',
        lifetime: '90d',
        deliver: [{ variable: { key: DEPLOY_TOKEN } }],
        ...entry,
      },
    ],
  });
}
const DEPLOY_TOKEN = 'DEPLOY_TOKEN';

function aToken(fields: Partial<ListedToken> = {}): ListedToken {
  return {
    id: 7,
    name: 'deploy',
    active: true,
    revoked: false,
    created_at: '2025-01-01T00:00:00Z',
    expires_at: '2025-06-10',
    family: 'bot-40',
    scopes: ['api'],
    access_level: 30,
    ...fields,
  };
}

function aRecord(fields: Partial<TokenRecord> = {}): TokenRecord {
  return {
    id: 'project_token-acme/api-7',
    kind: 'project_token',
    step: 'issued',
    attempt: 2,
    generation: 1,
    holder: API,
    name: 'deploy',
    old_token_id: 7,
    family: 'bot-40',
    strategy: 'overlap',
    grace_ms: DAY,
    expires_at: '2025-08-31',
    value_path: '/keys/rotate/tokens/project_token-acme_api-7.json',
    deliveries: [],
    known_ids: [7],
    sent_at: NOW.toISOString(),
    new_token_id: 9,
    value_sha256: 'abc',
    delivered: [],
    delivered_at: null,
    started_at: NOW.toISOString(),
    finished_at: null,
    last_error: null,
    closed_reason: null,
    ...fields,
  };
}

function snapshot(tokens: ListedToken[], fields: Partial<TokenSnapshot> = {}): TokenSnapshot {
  const listing: TokenListing = { holders: [{ holder: API, tokens }] };
  return {
    self: { tokenId: undefined, userId: 1 },
    listings: { project_access_tokens: [listing] },
    records: {},
    now: {},
    ...fields,
  };
}

const lines = (settings: TokenSettings, snap: TokenSnapshot, at = NOW) =>
  decideTokens(TOKEN_KINDS, settings, snap, at).map((d) => `${d.action} ${d.key}: ${d.reason}`);

describe('key_rotation tokens: when a token is due', () => {
  it.each([
    [
      'expiring within before_expiry',
      { expires_at: '2025-06-10' },
      {},
      'rotate: expires 2025-06-10, within before_expiry 14d',
    ],
    ['far from expiring', { expires_at: '2025-09-01' }, {}, 'skip: expires 2025-09-01, rotates 14d before'],
    [
      'older than max_age',
      { expires_at: '2025-12-01', created_at: '2024-11-01T00:00:00Z' },
      { max_age: 180 * DAY },
      'rotate: created 2024-11-01, older than max_age 180d (expires 2025-12-01)',
    ],
    ['never expiring, no max_age', { expires_at: null }, {}, 'skip: never expires, rotates 14d before'],
  ])('%s', (_title, token, rule, reason) => {
    expect(tokenDue({ before_expiry: 14 * DAY, ...rule }, aToken(token), NOW).reason).toBe(reason);
  });
});

describe('key_rotation tokens: decide', () => {
  it('rotates a due token: issue (the new expiry, the deliveries, no value) then deliver; one issue key per token', () => {
    const decisions = decideTokens(TOKEN_KINDS, config(), snapshot([aToken()]), NOW);
    expect(decisions.map((d) => `${d.action} ${d.key}`)).toEqual([
      `${ISSUE_TOKEN} project_token-acme/api-7:issue`,
      `${DELIVER_TOKEN} project_token-acme/api-7:deliver:0`,
    ]);
    expect(decisions[0].params).toMatchObject({
      old_token_id: 7,
      strategy: 'rotate',
      expires_at: '2025-08-31',
      scopes: ['api'],
      access_level: 30,
      deliveries: [
        { type: 'variable', scope: 'projects', place: 'acme/api', key: DEPLOY_TOKEN, masked: true, protected: true },
      ],
    });
    expect(decisions[0].details).toEqual([
      'deliver to variable DEPLOY_TOKEN (*) of project acme/api, masked, protected',
    ]);
  });

  it('caps the new expiry at the forge’s 365 days', () => {
    const [issue] = decideTokens(
      TOKEN_KINDS,
      config({ lifetime: '400d', before_expiry: '14d' }),
      snapshot([aToken()]),
      NOW,
    );
    expect(issue.params.expires_at).toBe('2026-06-02');
  });

  it('skips the daemon’s own token, a holder it cannot read, and a personal token whose variable names no place', () => {
    expect(lines(config(), snapshot([aToken()], { self: { tokenId: 7, userId: 1 } }))).toEqual([
      "skip project_token-acme/api-7: skip: the daemon's own token (expires 2025-06-10): it is rotated through gitlab.token_file, never by a policy",
    ]);
    const unread = snapshot([], {
      listings: {
        project_access_tokens: [{ holders: [{ holder: API, unreadable: 'project acme/api could not be read' }] }],
      },
    });
    expect(lines(config(), unread)).toEqual([
      'skip project_token-acme/api: skip: project acme/api could not be read; its tokens are left as they are',
    ]);
    const personal = config({ users: ['mia'] }, 'personal_access_tokens');
    const mia = { ref: 2, label: 'user mia' };
    expect(
      lines(personal, {
        self: { tokenId: undefined, userId: 1 },
        listings: { personal_access_tokens: [{ holders: [{ holder: mia, tokens: [aToken()] }] }] },
        records: {},
        now: {},
      }),
    ).toEqual([
      'skip personal_token-2-7: skip: expires 2025-06-10, within before_expiry 14d, but variable DEPLOY_TOKEN names no project or group, and a personal access token has none of its own',
    ]);
  });

  it('takes a rotation whose answer was not kept up again: the issue step (same key) looks for its token, then delivers', () => {
    const record = aRecord({ step: 'sending', new_token_id: null });
    const decisions = lines(
      config(),
      snapshot([aToken({ active: false, revoked: true })], {
        records: { [record.id]: record },
        now: { [record.id]: [] },
      }),
    );
    expect(decisions).toEqual([
      `${ISSUE_TOKEN} project_token-acme/api-7:issue: resume: the answer to the call sent ${NOW.toISOString()} was not kept; find its token or send again`,
      `${DELIVER_TOKEN} project_token-acme/api-7:deliver:2: deliver the new token`,
    ]);
  });

  it('closes a rotation whose new token a person revoked, and never decides the new token as a token to rotate', () => {
    const record = aRecord();
    const fresh = aToken({ id: 9, expires_at: '2025-08-31' });
    const revoked = { ...fresh, active: false, revoked: true };
    expect(
      lines(
        config(),
        snapshot([aToken(), fresh], { records: { [record.id]: record }, now: { [record.id]: [aToken(), revoked] } }),
      ),
    ).toEqual([
      `${CLOSE_TOKEN_ROTATION} project_token-acme/api-7#1:close: close: new token 9 was revoked by someone: a person's revocation wins, nothing more is delivered`,
      'skip project_token-acme/api-9: skip: new token of rotation project_token-acme/api-7, expires 2025-08-31',
    ]);
  });

  it('overlap: keeps the old token through the grace, then revokes it; a holder answering 404 makes it wait', () => {
    const record = aRecord({ step: 'delivered', delivered_at: NOW.toISOString() });
    const listed = [aToken(), aToken({ id: 9, expires_at: '2025-08-31' })];
    const snap = snapshot(listed, { records: { [record.id]: record }, now: { [record.id]: listed } });
    expect(lines(config(), snap).filter((line) => line.startsWith('skip project_token-acme/api-7:'))).toEqual([
      'skip project_token-acme/api-7: skip: keep old token 7 until 2025-06-03T12:00:00.000Z (grace 1d)',
    ]);
    const later = new Date(NOW.getTime() + DAY + 1);
    expect(
      decideTokens(TOKEN_KINDS, config(), snap, later)
        .filter((d) => d.action !== SKIP)
        .map((d) => `${d.action} ${d.key}`),
    ).toEqual([`${REVOKE_OLD_TOKEN} project_token-acme/api-7:revoke_old:2`]);
    const gone = snapshot(listed, { records: { [record.id]: record }, now: { [record.id]: 'gone' } });
    expect(lines(config(), gone, later)[0]).toBe(
      "skip project_token-acme/api-7: skip: project acme/api answers 404 (deleted, or out of the token's sight); rotation project_token-acme/api-7 waits at delivered",
    );
  });

  it('finishes an open rotation no listing shows any more', () => {
    const record = aRecord({ strategy: 'rotate' });
    expect(
      lines(config(), snapshot([], { records: { [record.id]: record }, now: { [record.id]: [aToken({ id: 9 })] } })),
    ).toEqual([
      `${DELIVER_TOKEN} project_token-acme/api-7:deliver:2: resume: deliver new token 9 from /keys/rotate/tokens/project_token-acme_api-7.json`,
    ]);
  });

  it('leaves revoked tokens out unless a rotation of one is open, and says an expired one cannot be rotated', () => {
    const revoked = aToken({ id: 5, active: false, revoked: true });
    const expired = aToken({ id: 6, active: false, expires_at: '2025-05-30' });
    expect(lines(config(), snapshot([revoked, expired]))).toEqual([
      'skip project_token-acme/api-6: skip: expired 2025-05-30; an expired token cannot be rotated, a person makes a new one',
    ]);
    // Rotated by the forge (the old token revoked) while its index entry was lost: found through the listing, delivered.
    const record = aRecord({ id: 'project_token-acme/api-5', old_token_id: 5, strategy: 'rotate' });
    const snap = snapshot([revoked, aToken({ id: 9 })], {
      records: { [record.id]: record },
      now: { [record.id]: [revoked, aToken({ id: 9 })] },
    });
    expect(decideTokens(TOKEN_KINDS, config(), snap, NOW).map((d) => `${d.action} ${d.key}`)).toEqual([
      `${DELIVER_TOKEN} project_token-acme/api-5:deliver:2`,
      'skip project_token-acme/api-9',
    ]);
  });
});

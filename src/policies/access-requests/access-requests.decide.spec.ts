import { SKIP } from '../../engine/policy';
import type { AdminUser } from '../../gitlab/types/users';
import {
  aGroup,
  anAdminUser,
  aPolicy,
  aProject,
  aPublicUser,
  aRequest,
  aSnapshot,
  daysAgo,
  NOW,
} from '../../../test/support/builders/access-requests';
import {
  APPROVE,
  decideAccessRequests,
  DENY,
  type PendingRequest,
  type Requester,
  roughDuration,
} from './access-requests.decide';

const NOT_ADMIN = "the token is not an administrator's";

interface Case {
  /** The policy's fields (rules, otherwise, deny_pending_after). */
  readonly policy: Record<string, unknown>;
  /** The requester's record; default: the administrator view of alice@acme.com (two-factor on, confirmed, 400 days old). */
  readonly user?: Requester | 'unread';
  readonly request?: Partial<PendingRequest>;
  /** Whether the token is an administrator's; default: true when the record is the administrator view. */
  readonly admin?: boolean;
}

/** The one decision for alice's request to join acme. */
function decideOne({ policy, user = anAdminUser(), request = {}, admin }: Case) {
  const users: Array<[number, Requester]> = user === 'unread' ? [] : [[12, user]];
  const isAdmin = admin ?? (user !== 'unread' && user !== null && 'is_admin' in user);
  const decisions = decideAccessRequests(
    aPolicy(policy),
    aSnapshot([aGroup([aRequest(request)])], users, isAdmin),
    NOW,
  );
  expect(decisions).toHaveLength(1);
  return decisions[0];
}

const rule = (when: Record<string, unknown>, action: Record<string, unknown> = { approve: 'developer' }) => ({
  rules: [{ ...action, when }],
});
const withoutField = (field: keyof AdminUser): AdminUser => {
  const user: Partial<AdminUser> = anAdminUser();
  delete user[field];
  return user as AdminUser;
};
const publicAlice = aPublicUser();

describe('access_requests decide: each condition, and failing closed', () => {
  it.each<[string, Case, string, string]>([
    // usernames
    [
      'a username that matches (unanchored)',
      { policy: rule({ usernames: ['lic'] }) },
      APPROVE,
      'approve as developer: rule 1 (username matches "lic")',
    ],
    [
      'the first of several expressions that matches is named',
      { policy: rule({ usernames: ['^bob', '^ali', 'ice$'] }) },
      APPROVE,
      'approve as developer: rule 1 (username matches "^ali")',
    ],
    [
      'a username no expression matches',
      { policy: rule({ usernames: ['^spam'] }) },
      SKIP,
      'leave: no rule matched (rule 1: username alice not matched)',
    ],
    [
      'usernames are known to any token',
      { policy: rule({ usernames: ['^alice$'] }), user: publicAlice },
      APPROVE,
      'approve as developer: rule 1 (username matches "^alice$")',
    ],
    // email_domains
    [
      'an email domain that is listed',
      { policy: rule({ email_domains: ['example.org', 'acme.com'] }) },
      APPROVE,
      'approve as developer: rule 1 (email domain acme.com)',
    ],
    [
      'an email domain in another case',
      { policy: rule({ email_domains: ['Acme.com'] }), user: anAdminUser({ email: 'Alice@ACME.COM' }) },
      APPROVE,
      'approve as developer: rule 1 (email domain acme.com)',
    ],
    [
      'a subdomain is another domain',
      { policy: rule({ email_domains: ['acme.com'] }), user: anAdminUser({ email: 'alice@mail.acme.com' }) },
      SKIP,
      'leave: no rule matched (rule 1: email domain mail.acme.com not listed)',
    ],
    [
      'a look-alike domain is another domain',
      { policy: rule({ email_domains: ['acme.com'] }), user: anAdminUser({ email: 'alice@evilacme.com' }) },
      SKIP,
      'leave: no rule matched (rule 1: email domain evilacme.com not listed)',
    ],
    [
      'the domain is what follows the last @',
      { policy: rule({ email_domains: ['acme.com'] }), user: anAdminUser({ email: '"acme.com@x"@example.org' }) },
      SKIP,
      'leave: no rule matched (rule 1: email domain example.org not listed)',
    ],
    [
      'email unknown to an ordinary token',
      { policy: rule({ email_domains: ['acme.com'] }), user: publicAlice },
      SKIP,
      `leave: rule 1 cannot be decided (email unknown: ${NOT_ADMIN}); neither approved nor denied on a fact the token cannot read`,
    ],
    [
      'a public email does not stand in for the primary one',
      { policy: rule({ email_domains: ['acme.com'] }), user: aPublicUser({ public_email: 'alice@acme.com' }) },
      SKIP,
      `leave: rule 1 cannot be decided (email unknown: ${NOT_ADMIN}); neither approved nor denied on a fact the token cannot read`,
    ],
    [
      'an administrator view without email',
      { policy: rule({ email_domains: ['acme.com'] }), user: withoutField('email') },
      SKIP,
      'leave: rule 1 cannot be decided (email unknown: the user record does not show it); neither approved nor denied on a fact the token cannot read',
    ],
    [
      'an email without @ has no domain, though it reads like a listed one',
      { policy: rule({ email_domains: ['acme.com'] }), user: anAdminUser({ email: 'acme.com' }) },
      SKIP,
      'leave: rule 1 cannot be decided (email unknown: the user record does not show it); neither approved nor denied on a fact the token cannot read',
    ],
    // two_factor
    [
      'two-factor on, wanted on',
      { policy: rule({ two_factor: true }) },
      APPROVE,
      'approve as developer: rule 1 (two-factor on)',
    ],
    [
      'two-factor off, wanted on',
      { policy: rule({ two_factor: true }), user: anAdminUser({ two_factor_enabled: false }) },
      SKIP,
      'leave: no rule matched (rule 1: two-factor off)',
    ],
    [
      'two-factor off, wanted off',
      { policy: rule({ two_factor: false }, { deny: true }), user: anAdminUser({ two_factor_enabled: false }) },
      DENY,
      'deny: rule 1 (two-factor off)',
    ],
    [
      'two-factor unknown to an ordinary token',
      { policy: rule({ two_factor: true }), user: publicAlice },
      SKIP,
      `leave: rule 1 cannot be decided (two-factor unknown: ${NOT_ADMIN}); neither approved nor denied on a fact the token cannot read`,
    ],
    [
      'two-factor unknown never denies either',
      { policy: rule({ two_factor: false }, { deny: true }), user: publicAlice },
      SKIP,
      `leave: rule 1 cannot be decided (two-factor unknown: ${NOT_ADMIN}); neither approved nor denied on a fact the token cannot read`,
    ],
    // external
    [
      'not external, wanted not external',
      { policy: rule({ external: false }) },
      APPROVE,
      'approve as developer: rule 1 (not external)',
    ],
    [
      'external, wanted not external',
      { policy: rule({ external: false }), user: anAdminUser({ external: true }) },
      SKIP,
      'leave: no rule matched (rule 1: external)',
    ],
    [
      'external, wanted external',
      { policy: rule({ external: true }, { approve: 'guest' }), user: anAdminUser({ external: true }) },
      APPROVE,
      'approve as guest: rule 1 (external)',
    ],
    [
      'external unknown to an ordinary token',
      { policy: rule({ external: false }), user: publicAlice },
      SKIP,
      `leave: rule 1 cannot be decided (external unknown: ${NOT_ADMIN}); neither approved nor denied on a fact the token cannot read`,
    ],
    // bot
    [
      'a person, wanted a person',
      { policy: rule({ bot: false }) },
      APPROVE,
      'approve as developer: rule 1 (not a bot)',
    ],
    [
      'a bot, wanted a person',
      { policy: rule({ bot: false }), user: anAdminUser({ bot: true }) },
      SKIP,
      'leave: no rule matched (rule 1: a bot)',
    ],
    [
      'a bot, wanted a bot',
      { policy: rule({ bot: true }, { deny: true }), user: aPublicUser({ bot: true }) },
      DENY,
      'deny: rule 1 (a bot)',
    ],
    [
      'bot is in the public view',
      { policy: rule({ bot: false }), user: publicAlice },
      APPROVE,
      'approve as developer: rule 1 (not a bot)',
    ],
    [
      'a record without bot',
      { policy: rule({ bot: false }), user: withoutField('bot' as keyof AdminUser) },
      SKIP,
      'leave: rule 1 cannot be decided (bot unknown: the user record does not show it); neither approved nor denied on a fact the token cannot read',
    ],
    // confirmed
    [
      'confirmed, wanted confirmed',
      { policy: rule({ confirmed: true }) },
      APPROVE,
      'approve as developer: rule 1 (email confirmed)',
    ],
    [
      'not confirmed (null), wanted confirmed',
      { policy: rule({ confirmed: true }), user: anAdminUser({ confirmed_at: null as unknown as string }) },
      SKIP,
      'leave: no rule matched (rule 1: email not confirmed)',
    ],
    [
      'not confirmed, wanted not confirmed',
      {
        policy: rule({ confirmed: false }, { deny: true }),
        user: anAdminUser({ confirmed_at: null as unknown as string }),
      },
      DENY,
      'deny: rule 1 (email not confirmed)',
    ],
    [
      'confirmation unknown to an ordinary token',
      { policy: rule({ confirmed: true }), user: publicAlice },
      SKIP,
      `leave: rule 1 cannot be decided (confirmed unknown: ${NOT_ADMIN}); neither approved nor denied on a fact the token cannot read`,
    ],
    [
      'an administrator view without confirmed_at',
      { policy: rule({ confirmed: true }), user: withoutField('confirmed_at') },
      SKIP,
      'leave: rule 1 cannot be decided (confirmed unknown: the user record does not show it); neither approved nor denied on a fact the token cannot read',
    ],
    [
      'a missing confirmed_at is not taken for "not confirmed" either',
      { policy: rule({ confirmed: false }, { deny: true }), user: withoutField('confirmed_at') },
      SKIP,
      'leave: rule 1 cannot be decided (confirmed unknown: the user record does not show it); neither approved nor denied on a fact the token cannot read',
    ],
    // state
    [
      'active, wanted active',
      { policy: rule({ state: 'active' }) },
      APPROVE,
      'approve as developer: rule 1 (state active)',
    ],
    [
      'blocked, wanted active',
      { policy: rule({ state: 'active' }), user: anAdminUser({ state: 'blocked' }) },
      SKIP,
      'leave: no rule matched (rule 1: state blocked)',
    ],
    [
      'blocked, a deny rule for blocked users',
      { policy: rule({ state: 'blocked' }, { deny: true }), user: anAdminUser({ state: 'blocked' }) },
      DENY,
      'deny: rule 1 (state blocked)',
    ],
    [
      'blocked by the request alone',
      { policy: rule({ state: 'blocked' }, { deny: true }), request: { state: 'blocked' } },
      DENY,
      'deny: rule 1 (state blocked)',
    ],
    [
      'state is known to any token',
      { policy: rule({ state: 'active' }), user: publicAlice },
      APPROVE,
      'approve as developer: rule 1 (state active)',
    ],
    // min_account_age
    [
      'an account old enough',
      { policy: rule({ min_account_age: '30d' }) },
      APPROVE,
      'approve as developer: rule 1 (account older than 30d)',
    ],
    [
      'an account exactly old enough',
      { policy: rule({ min_account_age: '30d' }), user: anAdminUser({ created_at: daysAgo(30) }) },
      APPROVE,
      'approve as developer: rule 1 (account older than 30d)',
    ],
    [
      'a young account',
      { policy: rule({ min_account_age: '30d' }), user: anAdminUser({ created_at: daysAgo(3.5) }) },
      SKIP,
      'leave: no rule matched (rule 1: account 3d old, younger than 30d)',
    ],
    [
      'an account a few hours old',
      { policy: rule({ min_account_age: '1w' }), user: anAdminUser({ created_at: daysAgo(0.25) }) },
      SKIP,
      'leave: no rule matched (rule 1: account 6h old, younger than 1w)',
    ],
    [
      'account age is in the public view',
      { policy: rule({ min_account_age: '30d' }), user: publicAlice },
      APPROVE,
      'approve as developer: rule 1 (account older than 30d)',
    ],
    [
      'a record without a creation time',
      { policy: rule({ min_account_age: '30d' }), user: anAdminUser({ created_at: 'never' }) },
      SKIP,
      'leave: rule 1 cannot be decided (account age unknown: the user record has no creation time); neither approved nor denied on a fact the token cannot read',
    ],
    // records that could not be had
    [
      'a user the forge no longer knows',
      { policy: rule({ email_domains: ['acme.com'] }), user: null },
      SKIP,
      'leave: rule 1 cannot be decided (email unknown: the user record was not found); neither approved nor denied on a fact the token cannot read',
    ],
    [
      'a user not found, bot',
      { policy: rule({ bot: false }), user: null },
      SKIP,
      'leave: rule 1 cannot be decided (bot unknown: the user record was not found); neither approved nor denied on a fact the token cannot read',
    ],
    [
      'a user not found, account age',
      { policy: rule({ min_account_age: '1d' }), user: null },
      SKIP,
      'leave: rule 1 cannot be decided (account age unknown: the user record was not found); neither approved nor denied on a fact the token cannot read',
    ],
    [
      'a user not read',
      { policy: rule({ two_factor: true }), user: 'unread' },
      SKIP,
      'leave: rule 1 cannot be decided (two-factor unknown: the user record was not read); neither approved nor denied on a fact the token cannot read',
    ],
    [
      'a public view although the token is an administrator’s',
      { policy: rule({ external: false }), user: publicAlice, admin: true },
      SKIP,
      'leave: rule 1 cannot be decided (external unknown: the forge answered with the public view); neither approved nor denied on a fact the token cannot read',
    ],
    // several conditions: all must hold, the reason names each
    [
      'every condition holds',
      {
        policy: rule({
          usernames: ['^a'],
          email_domains: ['acme.com'],
          two_factor: true,
          external: false,
          bot: false,
          confirmed: true,
          state: 'active',
          min_account_age: '30d',
        }),
      },
      APPROVE,
      'approve as developer: rule 1 (username matches "^a", email domain acme.com, two-factor on, not external, not a bot, email confirmed, state active, account older than 30d)',
    ],
    [
      'one condition fails: the first failing one is named',
      {
        policy: rule({ email_domains: ['acme.com'], two_factor: true, external: false }),
        user: anAdminUser({ two_factor_enabled: false, external: true }),
      },
      SKIP,
      'leave: no rule matched (rule 1: two-factor off)',
    ],
    [
      'an ordinary token cannot approve on email and two-factor',
      { policy: rule({ email_domains: ['acme.com'], two_factor: true }), user: publicAlice },
      SKIP,
      `leave: rule 1 cannot be decided (email, two-factor unknown: ${NOT_ADMIN}); neither approved nor denied on a fact the token cannot read`,
    ],
    [
      'a rule without conditions',
      { policy: { rules: [{ approve: 'guest' }] } },
      APPROVE,
      'approve as guest: rule 1 (no conditions)',
    ],
    [
      'a level given by number',
      { policy: rule({ two_factor: true }, { approve: 40 }) },
      APPROVE,
      'approve as maintainer: rule 1 (two-factor on)',
    ],
    [
      'owner, for a group',
      { policy: rule({ two_factor: true }, { approve: 'owner' }) },
      APPROVE,
      'approve as owner: rule 1 (two-factor on)',
    ],
  ])('%s', (_title, input, action, reason) => {
    expect(decideOne(input)).toMatchObject({ action, reason });
  });
});

describe('access_requests decide: rule order, blocked users, otherwise and deny_pending_after', () => {
  const staff = { approve: 'developer', when: { email_domains: ['acme.com'], two_factor: true } };
  const spam = { deny: true, when: { usernames: ['^spam'] } };
  const bots = { deny: true, when: { bot: true } };
  const anyone = { approve: 'guest' };

  it.each<[string, Case, string, string]>([
    [
      'the first rule that holds decides',
      { policy: { rules: [staff, anyone] } },
      APPROVE,
      'approve as developer: rule 1 (email domain acme.com, two-factor on)',
    ],
    [
      'a later rule decides when an earlier one does not hold',
      { policy: { rules: [staff, anyone] }, user: anAdminUser({ two_factor_enabled: false }) },
      APPROVE,
      'approve as guest: rule 2 (no conditions)',
    ],
    [
      'a deny before an approve wins',
      {
        policy: { rules: [spam, staff] },
        request: { username: 'spammer' },
        user: anAdminUser({ username: 'spammer' }),
      },
      DENY,
      'deny: rule 1 (username matches "^spam")',
    ],
    [
      'an approve before a deny wins',
      {
        policy: { rules: [staff, spam] },
        request: { username: 'spammer' },
        user: anAdminUser({ username: 'spammer' }),
      },
      APPROVE,
      'approve as developer: rule 1 (email domain acme.com, two-factor on)',
    ],
    [
      'no rule holds: each rule says why',
      { policy: { rules: [staff, spam, bots] }, user: anAdminUser({ two_factor_enabled: false }) },
      SKIP,
      'leave: no rule matched (rule 1: two-factor off; rule 2: username alice not matched; rule 3: not a bot)',
    ],
    // a blocked user is never approved
    [
      'blocked: an approve rule that holds is not applied',
      { policy: { rules: [staff] }, user: anAdminUser({ state: 'blocked' }) },
      SKIP,
      'leave: user is blocked, never approved (rule 1 would approve as developer)',
    ],
    [
      'blocked by the request alone',
      { policy: { rules: [anyone] }, request: { state: 'blocked' } },
      SKIP,
      'leave: user is blocked, never approved (rule 1 would approve as guest)',
    ],
    [
      'blocked: a later deny rule decides',
      {
        policy: { rules: [staff, bots, { deny: true, when: { state: 'blocked' } }] },
        user: anAdminUser({ state: 'blocked' }),
      },
      DENY,
      'deny: rule 3 (state blocked)',
    ],
    [
      'blocked: otherwise deny',
      { policy: { rules: [anyone], otherwise: 'deny' }, user: anAdminUser({ state: 'blocked' }) },
      DENY,
      'deny: no rule matched, otherwise deny (rule 1: user is blocked, never approved)',
    ],
    [
      'blocked: denied after waiting too long',
      {
        policy: { rules: [anyone], deny_pending_after: '30d' },
        request: { state: 'blocked', requested_at: daysAgo(40) },
      },
      DENY,
      'deny: pending 40d, longer than deny_pending_after 30d',
    ],
    // otherwise
    [
      'otherwise leave is the default',
      { policy: { rules: [spam] } },
      SKIP,
      'leave: no rule matched (rule 1: username alice not matched)',
    ],
    [
      'otherwise deny',
      { policy: { rules: [spam], otherwise: 'deny' } },
      DENY,
      'deny: no rule matched, otherwise deny (rule 1: username alice not matched)',
    ],
    [
      'otherwise deny leaves a request whose rule cannot be read',
      { policy: { rules: [staff], otherwise: 'deny' }, user: publicAlice },
      SKIP,
      `leave: rule 1 cannot be decided (email, two-factor unknown: ${NOT_ADMIN}); neither approved nor denied on a fact the token cannot read`,
    ],
    [
      'otherwise deny denies once every rule is known not to match',
      { policy: { rules: [staff], otherwise: 'deny' }, user: anAdminUser({ two_factor_enabled: false }) },
      DENY,
      'deny: no rule matched, otherwise deny (rule 1: two-factor off)',
    ],
    [
      'a rule known not to match lets the next one decide, whatever it could not read',
      {
        policy: {
          rules: [{ approve: 'developer', when: { usernames: ['^bob'], email_domains: ['acme.com'] } }, { deny: true }],
        },
        user: publicAlice,
      },
      DENY,
      'deny: rule 2 (no conditions)',
    ],
    [
      'a rule that cannot be read stops a later deny rule',
      { policy: { rules: [staff, { deny: true }] }, user: publicAlice },
      SKIP,
      `leave: rule 1 cannot be decided (email, two-factor unknown: ${NOT_ADMIN}); neither approved nor denied on a fact the token cannot read`,
    ],
    [
      'a deny rule that cannot be read stops a later approve rule',
      { policy: { rules: [{ deny: true, when: { external: true } }, { approve: 'guest' }] }, user: publicAlice },
      SKIP,
      `leave: rule 1 cannot be decided (external unknown: ${NOT_ADMIN}); neither approved nor denied on a fact the token cannot read`,
    ],
    [
      'no rules, otherwise deny',
      { policy: { rules: [], otherwise: 'deny' } },
      DENY,
      'deny: no rule matched, otherwise deny',
    ],
    // deny_pending_after
    [
      'waited longer than deny_pending_after',
      { policy: { rules: [spam], deny_pending_after: '30d' }, request: { requested_at: daysAgo(31.5) } },
      DENY,
      'deny: pending 31d, longer than deny_pending_after 30d',
    ],
    [
      'waited exactly deny_pending_after',
      { policy: { rules: [spam], deny_pending_after: '30d' }, request: { requested_at: daysAgo(30) } },
      SKIP,
      'leave: no rule matched (rule 1: username alice not matched)',
    ],
    [
      'waited less',
      { policy: { rules: [spam], deny_pending_after: '30d' }, request: { requested_at: daysAgo(29) } },
      SKIP,
      'leave: no rule matched (rule 1: username alice not matched)',
    ],
    [
      'an approve rule wins over deny_pending_after',
      { policy: { rules: [staff], deny_pending_after: '30d' }, request: { requested_at: daysAgo(90) } },
      APPROVE,
      'approve as developer: rule 1 (email domain acme.com, two-factor on)',
    ],
    [
      'a deny rule gives its own reason',
      {
        policy: { rules: [bots], deny_pending_after: '30d' },
        request: { requested_at: daysAgo(90) },
        user: anAdminUser({ bot: true }),
      },
      DENY,
      'deny: rule 1 (a bot)',
    ],
    [
      'otherwise deny gives its own reason',
      {
        policy: { rules: [spam], otherwise: 'deny', deny_pending_after: '30d' },
        request: { requested_at: daysAgo(90) },
      },
      DENY,
      'deny: no rule matched, otherwise deny (rule 1: username alice not matched)',
    ],
    [
      'an old request whose rule cannot be read is left, not denied for its age',
      {
        policy: { rules: [staff], deny_pending_after: '2w' },
        request: { requested_at: daysAgo(15) },
        user: publicAlice,
      },
      SKIP,
      `leave: rule 1 cannot be decided (email, two-factor unknown: ${NOT_ADMIN}); neither approved nor denied on a fact the token cannot read`,
    ],
    [
      'a deny_pending_after in hours',
      { policy: { rules: [], deny_pending_after: '12h' }, request: { requested_at: daysAgo(0.75) } },
      DENY,
      'deny: pending 18h, longer than deny_pending_after 12h',
    ],
    [
      'no rules, only deny_pending_after',
      { policy: { rules: [], deny_pending_after: '30d' }, request: { requested_at: daysAgo(2) } },
      SKIP,
      'leave: no rule matched',
    ],
    [
      'an unreadable requested_at is never taken as old',
      { policy: { rules: [spam], deny_pending_after: '1d' }, request: { requested_at: 'soon' } },
      SKIP,
      'leave: no rule matched (rule 1: username alice not matched)',
    ],
  ])('%s', (_title, input, action, reason) => {
    expect(decideOne(input)).toMatchObject({ action, reason });
  });
});

describe('access_requests decide: the decision fields', () => {
  const config = aPolicy({
    projects: ['acme/api'],
    rules: [
      { approve: 'reporter', when: { two_factor: true } },
      { deny: true, when: { usernames: ['^spam'] } },
    ],
  });

  it('approves a group request at the rule’s level, keyed by the request', () => {
    const snapshot = aSnapshot(
      [aGroup([aRequest({ requested_at: '2025-06-01T10:00:00.000Z' })])],
      [[12, anAdminUser()]],
    );
    expect(decideAccessRequests(config, snapshot, NOW)).toEqual([
      {
        action: APPROVE,
        target: 'acme: alice (user 12)',
        key: 'group:acme:12:2025-06-01T10:00:00.000Z',
        reason: 'approve as reporter: rule 1 (two-factor on)',
        params: {
          source: 'group',
          id: 'acme',
          user_id: 12,
          requested_at: '2025-06-01T10:00:00.000Z',
          access_level: 20,
        },
        details: [
          'requested 2025-06-01T10:00:00.000Z (1d ago); administrator view',
          'rule 1 approve as reporter: matched (✓ two-factor on)',
          'rule 2 deny: not matched (✗ username alice not matched)',
        ],
      },
    ]);
  });

  it('denies a project request, and names a project and a group given by id', () => {
    const bob = aRequest({ id: 13, username: 'spam-bob', requested_at: daysAgo(2) });
    const snapshot = aSnapshot(
      [aProject([bob]), aProject([bob], 42), aGroup([bob], 7)],
      [[13, aPublicUser({ id: 13, username: 'spam-bob' })]],
      false,
    );
    const decisions = decideAccessRequests(
      aPolicy({ groups: [7], projects: ['acme/api', 42], rules: [{ deny: true, when: { usernames: ['^spam'] } }] }),
      snapshot,
      NOW,
    );
    expect(decisions.map(({ action, target, key, params }) => ({ action, target, key, params }))).toEqual([
      {
        action: DENY,
        target: 'group 7: spam-bob (user 13)',
        key: `group:7:13:${daysAgo(2)}`,
        params: { source: 'group', id: 7, user_id: 13, requested_at: daysAgo(2) },
      },
      {
        action: DENY,
        target: 'acme/api: spam-bob (user 13)',
        key: `project:acme/api:13:${daysAgo(2)}`,
        params: { source: 'project', id: 'acme/api', user_id: 13, requested_at: daysAgo(2) },
      },
      {
        action: DENY,
        target: 'project 42: spam-bob (user 13)',
        key: `project:42:13:${daysAgo(2)}`,
        params: { source: 'project', id: 42, user_id: 13, requested_at: daysAgo(2) },
      },
    ]);
    expect(decisions[0].details).toEqual([
      `requested ${daysAgo(2)} (2d ago); public view: the token is not an administrator's`,
      'rule 1 deny: matched (✓ username matches "^spam")',
    ]);
  });

  it('gives a skip the same target, key and params as an action, and details that show every condition', () => {
    const decision = decideOne({
      policy: {
        rules: [{ approve: 'developer', when: { email_domains: ['acme.com'], two_factor: true, bot: false } }],
      },
      user: publicAlice,
    });
    expect(decision).toMatchObject({
      action: SKIP,
      target: 'acme: alice (user 12)',
      key: `group:acme:12:${daysAgo(1)}`,
      params: { source: 'group', id: 'acme', user_id: 12, requested_at: daysAgo(1) },
    });
    expect(decision.details).toEqual([
      `requested ${daysAgo(1)} (1d ago); public view: the token is not an administrator's`,
      `rule 1 approve as developer: not known (? email unknown: ${NOT_ADMIN}; ? two-factor unknown: ${NOT_ADMIN}; ✓ not a bot)`,
    ]);
  });

  it('says in the details when a rule held but the user is blocked', () => {
    const decision = decideOne({
      policy: { rules: [{ approve: 'guest', when: { bot: false } }] },
      user: anAdminUser({ state: 'blocked' }),
    });
    expect(decision.details?.[1]).toBe('rule 1 approve as guest: not applied (user is blocked) (✓ not a bot)');
  });

  it('keys a new request by the same user afresh: a denied user who asks again is decided again', () => {
    const first = decideOne({ policy: { rules: [{ approve: 'guest' }] }, request: { requested_at: daysAgo(10) } });
    const again = decideOne({ policy: { rules: [{ approve: 'guest' }] }, request: { requested_at: daysAgo(1) } });
    expect(first.key).not.toBe(again.key);
  });

  it('keys the same request the same way whatever the rules decide', () => {
    const left = decideOne({ policy: { rules: [{ deny: true, when: { usernames: ['^x'] } }] } });
    const denied = decideOne({ policy: { rules: [], otherwise: 'deny' } });
    expect(left.key).toBe(denied.key);
  });
});

describe('access_requests decide: determinism', () => {
  const config = aPolicy({ groups: ['acme', 'beta'], projects: ['acme/api'], rules: [{ approve: 'guest' }] });
  const r = (id: number, days: number) => aRequest({ id, username: `user${id}`, requested_at: daysAgo(days) });
  const users: Array<[number, Requester]> = [1, 2, 3, 4, 5].map((id) => [
    id,
    anAdminUser({ id, username: `user${id}` }),
  ]);
  const sources = [aProject([r(5, 1)]), aGroup([r(1, 2), r(2, 9), r(3, 2)], 'beta'), aGroup([r(4, 3), r(1, 5)])];

  it('orders groups then projects as configured, then the oldest request first (ties by user id)', () => {
    const targets = decideAccessRequests(config, aSnapshot(sources, users), NOW).map((d) => d.target);
    expect(targets).toEqual([
      'acme: user1 (user 1)',
      'acme: user4 (user 4)',
      'beta: user2 (user 2)',
      'beta: user1 (user 1)',
      'beta: user3 (user 3)',
      'acme/api: user5 (user 5)',
    ]);
  });

  it('gives the same decisions whatever order the snapshot lists things in', () => {
    const reversed = [...sources].reverse().map((source) => ({ ...source, requests: [...source.requests].reverse() }));
    expect(decideAccessRequests(config, aSnapshot(reversed, users), NOW)).toEqual(
      decideAccessRequests(config, aSnapshot(sources, users), NOW),
    );
  });

  it('decides nothing when nothing is pending', () => {
    expect(decideAccessRequests(config, aSnapshot([aGroup([])], []), NOW)).toEqual([]);
  });
});

describe('roughDuration', () => {
  it.each([
    [31.9 * 86_400_000, '31d'],
    [86_400_000, '1d'],
    [5.5 * 3_600_000, '5h'],
    [90_000, '1m'],
    [12_000, '12s'],
    [-5, '0s'],
  ])('%d ms is %s', (ms, text) => {
    expect(roughDuration(ms)).toBe(text);
  });
});

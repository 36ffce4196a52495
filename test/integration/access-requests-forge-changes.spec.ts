import { EngineService } from '../../src/engine/engine.service';
import { POLICY_TYPES } from '../../src/policies';
import type { World } from '../../src/sandbox';
import { useEngineHarness } from '../support/engine-harness';
import { asPerson, control, whileHeld } from '../support/person';
import { acmeGroup, baseWorld } from '../support/world-builders';

/**
 * access_requests on a forge people use too: a person denies a request, or blocks its user, while the bot is about to
 * approve it. What the bot grants was never revoked by a person after its decision.
 */

const ADA_TOKEN = 'glpat-sandbox-second-admin';

/** Group acme (10) and acme/tools (11), each with a pending request of olaf (4), who has two-factor on. */
function world(): World {
  const base = baseWorld();
  return {
    ...base,
    users: [
      ...(base.users ?? []).map((user) => (user.username === 'olaf' ? { ...user, two_factor: true } : user)),
      // A second administrator, who takes the bot's administrator flag away.
      { id: 9, username: 'ada', name: 'Ada Admin', email: 'ada@acme.test', admin: true, tokens: [ADA_TOKEN] },
    ],
    groups: [
      // The bot's user owns acme as well: without its administrator flag it still manages the requests.
      acmeGroup({
        access_requests: [{ user: 'olaf', requested_at: 'now-1h' }],
        members: [...(acmeGroup().members ?? []), { user: 'root', access_level: 'owner' }],
      }),
      { id: 11, path: 'tools', parent: 'acme', access_requests: [{ user: 'olaf', requested_at: 'now-1h' }] },
    ],
    now: undefined,
  };
}

describe('access_requests while people work on the forge', () => {
  const harness = useEngineHarness({ name: 'access-forge-changes', world, policyTypes: POLICY_TYPES });
  const app = () =>
    harness.app({
      gitlab: 'max_requests_per_minute: 100000, timeout: 30s',
      policies: [
        '  - name: gate',
        '    type: access_requests',
        '    groups: [acme, acme/tools]',
        '    interval: 1m',
        '    rules:',
        '      - { approve: developer, when: { two_factor: true } }',
      ],
    });
  const botApprovals = () =>
    harness.sandbox.state.requestLog.filter((r) => r.method === 'PUT' && r.path.endsWith('/approve'));
  const isMember = (group: number) =>
    harness.sandbox.state.groupAccessLevel(
      harness.sandbox.state.users.get(4)!,
      harness.sandbox.state.groups.get(group)!,
    ) > 0;

  it('does not approve a request a person denied after the bot decided: the approval is stale', async () => {
    const engine = (await app()).get(EngineService);
    // The person denies olaf's request to acme while the bot reads the request list again before approving it.
    const pass = await whileHeld(
      harness.sandbox,
      { method: 'GET', path: '^/api/v4/groups/acme/access_requests$', after: 1 },
      () => engine.runPass('gate', 'act'),
      async () => {
        expect((await asPerson(harness.sandbox, 'DELETE', '/groups/10/access_requests/4')).status).toBe(204);
      },
    );
    expect(pass.records.map((r) => `${r.decision.target} ${r.outcome} ${r.detail ?? ''}`)).toEqual([
      'acme: olaf (user 4) stale the request of user 4 is no longer pending (approved, denied or withdrawn by someone else)',
      'acme/tools: olaf (user 4) done member at access level 30',
    ]);
    expect(isMember(10)).toBe(false);
    expect(botApprovals().map((r) => r.path)).toEqual(['/api/v4/groups/acme%2Ftools/access_requests/4/approve']);
  });

  it('does not approve a user a person blocked after the bot decided', async () => {
    const engine = (await app()).get(EngineService);
    const pass = await whileHeld(
      harness.sandbox,
      { method: 'GET', path: '^/api/v4/users/4$', after: 1 },
      () => engine.runPass('gate', 'act'),
      async () => {
        // An administrator blocks olaf (the sandbox serves no block endpoint: its state is changed directly).
        harness.sandbox.state.users.get(4)!.state = 'blocked';
      },
    );
    expect(pass.records[0]).toMatchObject({
      outcome: 'stale',
      detail: expect.stringMatching(/^the rules decide otherwise now: leave: user is blocked, never approved/),
    });
    expect(botApprovals()).toEqual([]);
    expect(isMember(10)).toBe(false);
    expect(isMember(11)).toBe(false);
  });

  it('does not approve at the level it decided when the rules now grant a lower one', async () => {
    const engine = (
      await harness.app({
        gitlab: 'max_requests_per_minute: 100000, timeout: 30s',
        policies: [
          '  - name: gate',
          '    type: access_requests',
          '    groups: [acme, acme/tools]',
          '    interval: 1m',
          '    rules:',
          '      - { approve: maintainer, when: { two_factor: true } }',
          '      - { approve: guest }',
        ],
      })
    ).get(EngineService);
    // olaf turns two-factor off while the bot reads his record again before approving him as maintainer.
    const pass = await whileHeld(
      harness.sandbox,
      { method: 'GET', path: '^/api/v4/users/4$', after: 1 },
      () => engine.runPass('gate', 'act'),
      async () => {
        harness.sandbox.state.users.get(4)!.two_factor_enabled = false;
      },
    );
    // Still an approval, but not the one decided: nothing is sent, and the next pass approves at the level due now.
    expect(pass.records.map((r) => `${r.outcome} ${r.detail ?? ''}`)).toEqual([
      'stale the rules decide otherwise now: approve as guest: rule 2 (no conditions)',
      'stale the rules decide otherwise now: approve as guest: rule 2 (no conditions)',
    ]);
    expect(botApprovals()).toEqual([]);
    expect(isMember(10)).toBe(false);
    expect(isMember(11)).toBe(false);

    await engine.runPass('gate', 'act');
    const olaf = harness.sandbox.state.users.get(4)!;
    expect(
      [10, 11].map((group) => harness.sandbox.state.groupAccessLevel(olaf, harness.sandbox.state.groups.get(group)!)),
    ).toEqual([10, 10]);
  });

  it('goes on with the other group when one is closed to the token', async () => {
    expect(await control(harness.sandbox, 'POST', '/access', { user: 'root', group: 'acme/tools', level: 0 })).toBe(
      200,
    );
    const engine = (await app()).get(EngineService);
    const pass = await engine.runPass('gate', 'act');
    expect(pass.error).toBeUndefined();
    expect(pass.unobserved?.map((entry) => entry.target)).toEqual(['group acme/tools']);
    expect(pass.records.map((r) => `${r.decision.target} ${r.outcome}`)).toEqual(['acme: olaf (user 4) done']);
    expect(isMember(10)).toBe(true);
  });

  describe('a token that loses its administrator flag', () => {
    const gate = (otherwise: string) =>
      harness.app({
        gitlab: 'max_requests_per_minute: 100000, timeout: 30s',
        policies: [
          '  - name: gate',
          '    type: access_requests',
          '    groups: [acme, acme/tools]',
          '    interval: 1m',
          `    otherwise: ${otherwise}`,
          '    rules:',
          '      - { approve: developer, when: { email_domains: [acme.com] } }',
        ],
      });
    const botDenials = () =>
      harness.sandbox.state.requestLog.filter((r) => r.method === 'DELETE' && r.path.includes('/access_requests/'));
    const demoteBot = async (admin: boolean) =>
      expect((await asPerson(harness.sandbox, 'PUT', '/users/1', { admin }, ADA_TOKEN)).status).toBe(200);

    it('denies nothing with otherwise: deny, since it can no longer read the emails the rule needs', async () => {
      await demoteBot(false);
      const engine = (await gate('deny')).get(EngineService);
      const pass = await engine.runPass('gate', 'act');
      expect(pass.records.map((r) => `${r.outcome} ${r.decision.reason}`)).toEqual([
        "skipped leave: rule 1 cannot be decided (email unknown: the token is not an administrator's); neither approved nor denied on a fact the token cannot read",
        "skipped leave: rule 1 cannot be decided (email unknown: the token is not an administrator's); neither approved nor denied on a fact the token cannot read",
      ]);
      expect(botDenials()).toEqual([]);
      expect(harness.sandbox.state.accessRequests).toHaveLength(2);

      // Its flag given back, the next pass decides on the facts: olaf's address is not acme.com.
      await demoteBot(true);
      expect((await engine.runPass('gate', 'act')).records.map((r) => `${r.outcome} ${r.decision.reason}`)).toEqual([
        'done deny: no rule matched, otherwise deny (rule 1: email domain example.org not listed)',
        'done deny: no rule matched, otherwise deny (rule 1: email domain example.org not listed)',
      ]);
    });

    it('does not send a denial decided before the flag was taken away: read again, the rule cannot be decided', async () => {
      const engine = (await gate('deny')).get(EngineService);
      const pass = await whileHeld(
        harness.sandbox,
        { method: 'GET', path: '^/api/v4/users/4$', after: 1 },
        () => engine.runPass('gate', 'act'),
        () => demoteBot(false),
      );
      expect(pass.records[0]).toMatchObject({
        outcome: 'stale',
        detail: expect.stringMatching(
          /^the rules decide otherwise now: leave: rule 1 cannot be decided \(email unknown/,
        ),
      });
      expect(pass.records[1]?.outcome).toBe('stale');
      expect(botDenials()).toEqual([]);
    });
  });
});

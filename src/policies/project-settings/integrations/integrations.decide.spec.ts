import { SKIP, type Decision } from '../../../engine/policy';
import {
  anIntegration,
  aPolicy,
  aProjectSnapshot,
  aSnapshot,
  NOW,
} from '../../../../test/support/builders/project-settings';
import { decideProjectSettings, type ProjectSettingsProjectSnapshot } from '../project-settings.decide';
import { DISABLE_INTEGRATION, SET_INTEGRATION } from './integrations.decide';
import { fingerprintName, parameterFingerprint } from './integrations.params';

const T = NOW.getTime();
const WEBHOOK = 'https://chat.example.com/hooks/T0/B0/s3cr3t-webhook';
const CHAT = { 'chat-notifications-a': { webhook: WEBHOOK, notify_only_broken_pipelines: true } };
/** The fingerprint set_integration keeps after setting `value` for policy `baseline`. */
const printOf = (
  slug: 'chat-notifications-a' | 'issue-tracker-b' | 'chatops-a',
  parameter: string,
  value: string | number | boolean,
) => ({
  [fingerprintName(slug, parameter)]: parameterFingerprint('baseline', slug, parameter, value),
});

function decide(policy: Record<string, unknown>, ...projects: ProjectSettingsProjectSnapshot[]): Decision[] {
  return decideProjectSettings(aPolicy(policy), aSnapshot(...projects), NOW);
}

/** Action and reason of each decision, for tables. */
function lines(decisions: readonly Decision[]): [string, string][] {
  return decisions.map((decision) => [decision.action, decision.reason]);
}

describe('project_settings decide: integrations', () => {
  const policy = { protected_branches: undefined, integrations: CHAT };
  const held = (
    properties: Record<string, unknown> = { notify_only_broken_pipelines: true },
    fingerprints = printOf('chat-notifications-a', 'webhook', WEBHOOK),
  ) =>
    aProjectSnapshot({
      protectedBranches: undefined,
      integrations: { 'chat-notifications-a': anIntegration(properties) },
      fingerprints,
    });

  it('decides nothing when the values match and the secret is the one last set', () => {
    expect(decide(policy, held())).toEqual([]);
    // The forge may write booleans as text; the masked secret in the answer is never looked at.
    expect(decide(policy, held({ notify_only_broken_pipelines: '1', webhook: '************' }))).toEqual([]);
  });

  it('sets an integration that is not set, naming its secrets instead of carrying them', () => {
    const decisions = decide(policy, aProjectSnapshot({ protectedBranches: undefined, integrations: {} }));
    expect(decisions).toEqual([
      {
        action: SET_INTEGRATION,
        target: 'acme/api integration chat-notifications-a',
        key: `42:integration:chat-notifications-a:set_integration:${T}`,
        reason: 'acme/api: integration chat-notifications-a: not set → set',
        params: {
          project: 42,
          source: 'acme/api',
          slug: 'chat-notifications-a',
          values: { notify_only_broken_pipelines: true },
          secrets: ['webhook'],
        },
      },
    ]);
  });

  it.each<[string, ProjectSettingsProjectSnapshot, string]>([
    [
      'a value differs',
      held({ notify_only_broken_pipelines: false }),
      'acme/api: integration chat-notifications-a: notify_only_broken_pipelines: false → true',
    ],
    [
      'the value is unset',
      held({ notify_only_broken_pipelines: null }),
      'acme/api: integration chat-notifications-a: notify_only_broken_pipelines: (unset) → true',
    ],
    [
      'the secret changed since it was set',
      held(undefined, printOf('chat-notifications-a', 'webhook', 'https://chat.example.com/hooks/old')),
      'acme/api: integration chat-notifications-a: webhook: (secret) changed',
    ],
    [
      'no fingerprint is known (Redis lost its data)',
      held(undefined, {}),
      'acme/api: integration chat-notifications-a: webhook: (secret) not recorded → set',
    ],
    [
      'the service is inactive',
      aProjectSnapshot({
        protectedBranches: undefined,
        integrations: { 'chat-notifications-a': anIntegration({ notify_only_broken_pipelines: true }, false) },
        fingerprints: printOf('chat-notifications-a', 'webhook', WEBHOOK),
      }),
      'acme/api: integration chat-notifications-a: inactive → active',
    ],
  ])('sets it when %s', (_title, project, reason) => {
    const decisions = decide(policy, project);
    expect(lines(decisions)).toEqual([[SET_INTEGRATION, reason]]);
    expect(decisions[0].params).toEqual({
      project: 42,
      source: 'acme/api',
      slug: 'chat-notifications-a',
      values: { notify_only_broken_pipelines: true },
      secrets: ['webhook'],
    });
  });

  it('compares a value the forge does not show by what was last set', () => {
    const withChannel = {
      protected_branches: undefined,
      integrations: { 'chat-notifications-a': { ...CHAT['chat-notifications-a'], channel: '#ops' } },
    };
    const fingerprints = {
      ...printOf('chat-notifications-a', 'webhook', WEBHOOK),
      ...printOf('chat-notifications-a', 'channel', '#ops'),
    };
    expect(decide(withChannel, held(undefined, fingerprints))).toEqual([]);
    expect(lines(decide(withChannel, held(undefined, printOf('chat-notifications-a', 'webhook', WEBHOOK))))).toEqual([
      [SET_INTEGRATION, 'acme/api: integration chat-notifications-a: channel: (not shown by the forge) → "#ops"'],
    ]);
  });

  it('sends active for the one service that takes it, true unless declared', () => {
    const tracker = {
      url: 'https://tracker.acme.com/projects/API',
      username: 'forgewarden',
      password: 's3cr3t-password',
    };
    const decisions = decide(
      { protected_branches: undefined, integrations: { 'issue-tracker-b': tracker } },
      aProjectSnapshot({ protectedBranches: undefined, integrations: {} }),
    );
    expect(decisions[0].params).toEqual({
      project: 42,
      source: 'acme/api',
      slug: 'issue-tracker-b',
      values: { active: true, url: 'https://tracker.acme.com/projects/API', username: 'forgewarden' },
      secrets: ['password'],
    });
    const inactive = {
      protected_branches: undefined,
      integrations: { 'issue-tracker-b': { ...tracker, active: false } },
    };
    const observed = anIntegration({ url: tracker.url, username: tracker.username }, false);
    expect(
      decide(
        inactive,
        aProjectSnapshot({
          protectedBranches: undefined,
          integrations: { 'issue-tracker-b': observed },
          fingerprints: printOf('issue-tracker-b', 'password', tracker.password),
        }),
      ),
    ).toEqual([]);
  });

  it('leaves undeclared integrations alone without prune; with it disables the active ones', () => {
    const project = aProjectSnapshot({
      protectedBranches: undefined,
      integrations: {
        'chat-notifications-a': anIntegration({ notify_only_broken_pipelines: true }),
        'chatops-a': anIntegration(),
        'external-wiki': anIntegration({}, false),
      },
      fingerprints: printOf('chat-notifications-a', 'webhook', WEBHOOK),
    });
    expect(decide(policy, project)).toEqual([]);
    const decisions = decide({ ...policy, prune: true }, project);
    expect(lines(decisions)).toEqual([
      [DISABLE_INTEGRATION, 'acme/api: integration chatops-a: active, not declared → disable'],
    ]);
    expect(decisions[0].params).toEqual({ project: 42, source: 'acme/api', slug: 'chatops-a' });
  });

  it('reports integrations as not available where the forge gave no answer', () => {
    expect(lines(decide(policy, aProjectSnapshot({ protectedBranches: undefined })))).toEqual([
      [
        SKIP,
        'skip: acme/api: integrations: not available on this forge, or not to this token (the forge answered 404 or 403)',
      ],
    ]);
  });
});

describe('project_settings decide: secrets', () => {
  it('never puts a secret in a target, a reason, a key or the params', () => {
    const secrets = { webhook: WEBHOOK, token: 's3cr3t-chatops-token', password: 's3cr3t-password' };
    const policy = {
      protected_branches: undefined,
      prune: true,
      integrations: {
        'chat-notifications-a': { webhook: secrets.webhook, channel: '#ops' },
        'chatops-a': { token: secrets.token },
        'issue-tracker-b': { url: 'https://tracker.acme.com/p', username: 'fw', password: secrets.password },
      },
    };
    const projects = [
      aProjectSnapshot({ protectedBranches: undefined, integrations: {} }),
      aProjectSnapshot({
        project: 'acme/web',
        projectId: 43,
        protectedBranches: undefined,
        // The forge echoing a secret must not make decide echo it.
        integrations: {
          'chat-notifications-a': anIntegration({ webhook: secrets.webhook, channel: '#dev' }),
          'chatops-a': anIntegration({ token: secrets.token }),
        },
        fingerprints: printOf('chatops-a', 'token', 'an-older-token'),
      }),
    ];
    const decisions = decide({ ...policy, projects: ['acme/api', 'acme/web'] }, ...projects);
    expect(lines(decisions)).toEqual([
      // In the order of INTEGRATION_SLUGS.
      [SET_INTEGRATION, 'acme/api: integration chatops-a: not set → set'],
      [SET_INTEGRATION, 'acme/api: integration issue-tracker-b: not set → set'],
      [SET_INTEGRATION, 'acme/api: integration chat-notifications-a: not set → set'],
      [SET_INTEGRATION, 'acme/web: integration chatops-a: token: (secret) changed'],
      [SET_INTEGRATION, 'acme/web: integration issue-tracker-b: not set → set'],
      [
        SET_INTEGRATION,
        'acme/web: integration chat-notifications-a: webhook: (secret) not recorded → set, channel: "#dev" → "#ops"',
      ],
    ]);
    const printed = JSON.stringify(decisions);
    for (const value of Object.values(secrets)) expect(printed).not.toContain(value);
    expect(printed).not.toContain('s3cr3t');
  });
});

import { request } from 'undici';
import { ADMIN_TOKEN, baseWorld, MAINTAINER_TOKEN, OUTSIDER_TOKEN, USER_TOKEN } from '../support/world-builders';
import {
  ForbiddenError,
  GitlabClient,
  INTEGRATION_SLUGS,
  type IntegrationListEntry,
  type IntegrationParamsBySlug,
  type IntegrationSettings,
  type IntegrationSlug,
  NotFoundError,
  UnauthorizedError,
  ValidationError,
} from '../../src/gitlab';
import { useSandboxClients } from '../support/sandbox-clients';

/** Project integrations through the client against the sandbox over real HTTP. */

interface Case<S extends IntegrationSlug = IntegrationSlug> {
  slug: S;
  params: IntegrationParamsBySlug[S];
  /** Required parameters, in the documented order. */
  required: string[];
  /** `properties` of the settings shown afterwards. */
  properties: Record<string, unknown>;
  /** Event flags expected on in the settings (`commit_events` and `confidential_note_events` are never shown). */
  events: string[];
}

const caseOf = <S extends IntegrationSlug>(
  slug: S,
  params: IntegrationParamsBySlug[S],
  required: string[],
  properties: Record<string, unknown>,
  events: string[] = [],
): Case => ({ slug, params, required, properties, events });

const ISSUE_TRACKER = {
  new_issue_url: 'https://tracker.test/new',
  issues_url: 'https://tracker.test/issues/:id',
  project_url: 'https://tracker.test/p',
};
const NOTIFY_EVENTS = [
  'push_events',
  'issues_events',
  'confidential_issues_events',
  'merge_requests_events',
  'tag_push_events',
  'note_events',
  'pipeline_events',
  'wiki_page_events',
];

const CASES: Case[] = [
  caseOf(
    'task-comments',
    { api_key: 'k1', restrict_to_branch: 'main,dev' },
    ['api_key'],
    { api_key: 'k1', restrict_to_branch: 'main,dev' },
    ['push_events'],
  ),
  caseOf('project-commits-a', { token: 't', subdomain: 'acme', push_events: false }, ['token'], {
    token: 't',
    subdomain: 'acme',
  }),
  caseOf(
    'ci-server-a',
    { ci_server_url: 'https://ci.test', build_key: 'KEY', username: 'ci', password: 's3cret' },
    ['ci_server_url', 'build_key', 'username', 'password'],
    { ci_server_url: 'https://ci.test', build_key: 'KEY', username: 'ci' },
    ['push_events'],
  ),
  caseOf(
    'issue-tracker-a',
    { ...ISSUE_TRACKER, title: 'Tracker' },
    ['new_issue_url', 'issues_url', 'project_url'],
    { ...ISSUE_TRACKER, title: 'Tracker' },
    ['push_events'],
  ),
  caseOf(
    'ci-pipeline-service',
    { token: 't', project_url: 'https://p.test', enable_ssl_verification: true },
    ['token', 'project_url'],
    { token: 't', project_url: 'https://p.test', enable_ssl_verification: true },
    ['push_events'],
  ),
  caseOf('group-chat-a', { token: 't', room: 'dev' }, ['token'], { token: 't', room: 'dev' }, ['push_events']),
  caseOf(
    'chat-collab-a',
    { webhook: 'https://hook.test/a', note_events: false },
    ['webhook'],
    { webhook: 'https://hook.test/a', branches_to_be_notified: 'default' },
    NOTIFY_EVENTS.filter((e) => e !== 'note_events'),
  ),
  caseOf(
    'chat-collab-b',
    { webhook: 'https://hook.test/b', branches_to_be_notified: 'protected', notify_only_broken_pipelines: true },
    ['webhook'],
    { webhook: 'https://hook.test/b', branches_to_be_notified: 'protected', notify_only_broken_pipelines: true },
    NOTIFY_EVENTS,
  ),
  caseOf(
    'chat-collab-c',
    { webhook: 'https://hook.test/c', notify_only_default_branch: true },
    ['webhook'],
    { webhook: 'https://hook.test/c', branches_to_be_notified: 'default', notify_only_default_branch: true },
    NOTIFY_EVENTS,
  ),
  caseOf(
    'custom-issue-tracker',
    { ...ISSUE_TRACKER, description: 'd' },
    ['new_issue_url', 'issues_url', 'project_url'],
    { ...ISSUE_TRACKER, description: 'd' },
    ['push_events'],
  ),
  caseOf(
    'ci-platform-a',
    { token: 't', ci_platform_url: 'https://cp.test', tag_push_events: false },
    ['token', 'ci_platform_url'],
    { token: 't', ci_platform_url: 'https://cp.test' },
    ['push_events', 'merge_requests_events'],
  ),
  caseOf(
    'emails-on-push',
    { recipients: 'a@x.test b@x.test', disable_diffs: true },
    ['recipients'],
    { recipients: 'a@x.test b@x.test', disable_diffs: true, branches_to_be_notified: 'all' },
    ['push_events', 'tag_push_events'],
  ),
  caseOf('wiki-cloud-workspace', { wiki_workspace_url: 'https://ws.test' }, ['wiki_workspace_url'], {
    wiki_workspace_url: 'https://ws.test',
  }),
  caseOf('external-wiki', { external_wiki_url: 'https://wiki.test' }, ['external_wiki_url'], {
    external_wiki_url: 'https://wiki.test',
  }),
  caseOf('chatops-a', { token: 't' }, ['token'], { token: 't' }, ['push_events']),
  caseOf(
    'code-host-status',
    { token: 't', repository_url: 'https://code.test/r', static_context: true },
    ['token', 'repository_url'],
    { token: 't', repository_url: 'https://code.test/r', static_context: true },
  ),
  caseOf(
    'irc-gateway',
    { recipients: '#dev', server_port: 6697, colorize_messages: true },
    ['recipients'],
    { recipients: '#dev', server_port: 6697, colorize_messages: true },
    ['push_events'],
  ),
  caseOf(
    'issue-tracker-b',
    { url: 'https://jira.test', username: 'u', password: 'p', active: true },
    ['url', 'username', 'password'],
    {
      url: 'https://jira.test',
      username: 'u',
      tracker_issue_transition_automatic: false,
      tracker_issue_transition_id: '',
    },
    ['merge_requests_events', 'comment_on_event_enabled'],
  ),
  caseOf('chat-slash-commands-a', { token: 'slash-a' }, ['token'], { token: 'slash-a' }),
  caseOf('chat-slash-commands-b', { token: 'slash-b', username: 'bot' }, ['token'], {
    token: 'slash-b',
    username: 'bot',
  }),
  caseOf(
    'package-registry-update',
    { username: 'u', token: 't', server: 'https://pkg.test' },
    ['username', 'token'],
    { username: 'u', token: 't', server: 'https://pkg.test' },
    ['push_events', 'merge_requests_events', 'tag_push_events'],
  ),
  caseOf(
    'pipelines-email',
    { recipients: 'a@x.test,b@x.test', add_pusher: true },
    ['recipients'],
    { recipients: 'a@x.test,b@x.test', add_pusher: true, branches_to_be_notified: 'default' },
    ['pipeline_events'],
  ),
  caseOf(
    'project-mgmt-b',
    { token: 't', restrict_to_branch: 'main' },
    ['token'],
    { token: 't', restrict_to_branch: 'main' },
    ['push_events'],
  ),
  caseOf(
    'monitoring',
    { api_url: 'https://prom.test', iap_service_account_json: '{"type":"service_account"}' },
    ['api_url'],
    { api_url: 'https://prom.test', iap_service_account_json: '{"type":"service_account"}' },
  ),
  caseOf(
    'push-notification',
    { api_key: 'a', user_key: 'u', priority: '1', sound: 'bike' },
    ['api_key', 'user_key', 'priority'],
    { api_key: 'a', user_key: 'u', priority: '1', sound: 'bike' },
    ['push_events'],
  ),
  caseOf(
    'issue-tracker-c',
    { ...ISSUE_TRACKER },
    ['new_issue_url', 'project_url', 'issues_url'],
    { ...ISSUE_TRACKER },
    ['push_events'],
  ),
  caseOf(
    'chat-notifications-a',
    {
      webhook: 'https://hook.test/n',
      channel: '#ci',
      branches_to_be_notified: 'default_and_protected',
      deployment_channel: '#deploy',
    },
    ['webhook'],
    {
      webhook: 'https://hook.test/n',
      channel: '#ci',
      branches_to_be_notified: 'default_and_protected',
      deployment_channel: '#deploy',
    },
    ['confidential_issues_events'],
  ),
];

/** The sandbox clock starts at BASE_NOW and runs with real time. */
const NEAR_START = expect.stringMatching(/^2025-06-02T12:00:/) as string;

const SHOWN_FLAGS = [...NOTIFY_EVENTS, 'job_events', 'comment_on_event_enabled'];

describe('GitlabClient integrations against the sandbox', () => {
  const forge = useSandboxClients(() => baseWorld());
  const client = (token = MAINTAINER_TOKEN): GitlabClient => forge.client(token);

  it('covers every integration slug', () => {
    expect(CASES.map((c) => c.slug)).toEqual([...INTEGRATION_SLUGS]);
  });

  it('types the parameters by slug (compile-time only)', () => {
    const neverCalled = (c: GitlabClient): void => {
      // @ts-expect-error external_wiki_url is required
      void c.integrations.edit(1, 'external-wiki', {});
      // @ts-expect-error branches_to_be_notified is a literal union
      void c.integrations.edit(1, 'emails-on-push', { recipients: 'a', branches_to_be_notified: 'every' });
      // @ts-expect-error another slug's parameter
      void c.integrations.edit(1, 'chatops-a', { token: 't', webhook: 'https://hook.test' });
      // @ts-expect-error not an integration slug
      void c.integrations.show(1, 'no-such-service');
    };
    expect(neverCalled).toBeInstanceOf(Function);
  });

  it.each(CASES.map((c) => [c.slug, c] as const))('%s: PUT, GET, list and DELETE', async (slug, c) => {
    const mia = client();
    const put = await mia.integrations.edit('acme/api', slug, c.params);
    const expected: IntegrationSettings = {
      id: expect.any(Number) as number,
      title: expect.any(String) as string,
      slug,
      created_at: NEAR_START,
      updated_at: NEAR_START,
      active: true,
      ...Object.fromEntries(SHOWN_FLAGS.map((f) => [f, c.events.includes(f)])),
      properties: c.properties,
    } as IntegrationSettings;
    expect(put).toEqual(expected);
    expect(put).not.toHaveProperty('commit_events');
    expect(put).not.toHaveProperty('confidential_note_events');
    expect(await mia.integrations.show('acme/api', slug)).toEqual(put);
    expect(await mia.integrations.show(1, slug)).toEqual(put);

    const list = await mia.integrations.all('acme/api');
    expect(list).toEqual([
      expect.objectContaining({ id: put.id, slug, title: put.title, active: true, commit_events: expect.any(Boolean) }),
    ]);

    await mia.integrations.remove('acme/api', slug);
    await expect(mia.integrations.show('acme/api', slug)).rejects.toMatchObject({
      constructor: NotFoundError,
      status: 404,
      body: { message: '404 Service Not Found' },
    });
    expect(await mia.integrations.all('acme/api')).toEqual([]);
  });

  it.each(CASES.map((c) => [c.slug, c] as const))(
    '%s: PUT without any parameter names every required one',
    async (slug, c) => {
      const error: unknown = await client()
        .integrations.edit('acme/api', slug, {} as never)
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ValidationError);
      expect(error).toMatchObject({
        status: 400,
        body: { error: c.required.map((p) => `${p} is missing`).join(', ') },
      });
      await expect(client().integrations.show('acme/api', slug)).rejects.toBeInstanceOf(NotFoundError);
    },
  );

  it('rejects an empty required parameter and values outside the documented types', async () => {
    const mia = client();
    await expect(mia.integrations.edit('acme/api', 'external-wiki', { external_wiki_url: '' })).rejects.toMatchObject({
      status: 400,
      body: { error: 'external_wiki_url is missing' },
    });
    await expect(
      mia.integrations.edit('acme/api', 'emails-on-push', {
        recipients: 'a@x.test',
        branches_to_be_notified: 'everything' as never,
      }),
    ).rejects.toMatchObject({ status: 400, body: { error: 'branches_to_be_notified does not have a valid value' } });
    await expect(
      mia.integrations.edit('acme/api', 'irc-gateway', { recipients: '#a', server_port: 'http' as never }),
    ).rejects.toMatchObject({ status: 400, body: { error: 'server_port is invalid' } });
    await expect(
      mia.integrations.edit('acme/api', 'chatops-a', { token: 't', push_events: 'maybe' as never }),
    ).rejects.toMatchObject({ status: 400, body: { error: 'push_events is invalid' } });
    expect(await mia.integrations.all('acme/api')).toEqual([]);
  });

  it('lists only the active services, oldest first, with every flag of the list entry', async () => {
    const mia = client();
    const wiki = await mia.integrations.edit('acme/api', 'external-wiki', { external_wiki_url: 'https://wiki.test' });
    await mia.integrations.edit('acme/api', 'issue-tracker-b', {
      url: 'https://jira.test',
      username: 'u',
      password: 'p',
    });
    forge.sandbox.state.clock.advance(60_000);
    const slash = await mia.integrations.edit('acme/api', 'chat-slash-commands-a', { token: 'tok' });
    await mia.integrations.edit('acme/web', 'chatops-a', { token: 'other project' });

    const list = await mia.integrations.all('acme/api');
    expect(list).toEqual<IntegrationListEntry[]>([
      {
        id: wiki.id,
        title: wiki.title,
        slug: 'external-wiki',
        created_at: NEAR_START,
        updated_at: NEAR_START,
        active: true,
        commit_events: false,
        push_events: false,
        issues_events: false,
        confidential_issues_events: false,
        merge_requests_events: false,
        tag_push_events: false,
        note_events: false,
        confidential_note_events: false,
        pipeline_events: false,
        wiki_page_events: false,
        job_events: false,
        comment_on_event_enabled: false,
      },
      expect.objectContaining({
        id: slash.id,
        slug: 'chat-slash-commands-a',
        created_at: expect.stringMatching(/^2025-06-02T12:01:/) as string,
      }),
    ]);
    // The spec's own example: the slash-command service shows its token in `properties`.
    expect(slash.properties).toEqual({ token: 'tok' });
  });

  it('changes only the parameters a second PUT gives, keeping id, created_at and the rest, as the forge does', async () => {
    const mia = client();
    const first = await mia.integrations.edit('acme/api', 'group-chat-a', {
      token: 'a',
      room: 'dev',
      subdomain: 'acme',
      push_events: false,
    });
    forge.sandbox.state.clock.advance(3_600_000);
    const second = await mia.integrations.edit('acme/api', 'group-chat-a', { token: 'b' });
    expect(second).toMatchObject({ id: first.id, created_at: first.created_at, push_events: false });
    expect(second.updated_at).toMatch(/^2025-06-02T13:00:/);
    expect(second.properties).toEqual({ token: 'b', room: 'dev', subdomain: 'acme' });
    const third = await mia.integrations.edit('acme/api', 'group-chat-a', { token: 'b', room: '', push_events: true });
    expect(third).toMatchObject({ push_events: true, properties: { token: 'b', room: '', subdomain: 'acme' } });
  });

  describe('issue-tracker-b `active`', () => {
    const base = { url: 'https://jira.test', username: 'jira', password: 'pw' };

    it('is inactive when `active` is omitted or false, and active only with active=true', async () => {
      const mia = client();
      const omitted = await mia.integrations.edit('acme/api', 'issue-tracker-b', base);
      expect(omitted.active).toBe(false);
      expect(await mia.integrations.all('acme/api')).toEqual([]);
      expect((await mia.integrations.show('acme/api', 'issue-tracker-b')).active).toBe(false);

      const on = await mia.integrations.edit('acme/api', 'issue-tracker-b', { ...base, active: true });
      expect(on).toMatchObject({ id: omitted.id, active: true });
      expect((await mia.integrations.all('acme/api')).map((s) => s.slug)).toEqual(['issue-tracker-b']);

      // Any state → inactive on a PUT with active=false, or without `active` (the default).
      const off = await mia.integrations.edit('acme/api', 'issue-tracker-b', { ...base, active: false });
      expect(off.active).toBe(false);
      expect(await mia.integrations.all('acme/api')).toEqual([]);
      await mia.integrations.edit('acme/api', 'issue-tracker-b', { ...base, active: true });
      expect((await mia.integrations.edit('acme/api', 'issue-tracker-b', base)).active).toBe(false);
    });

    it('does not activate without the required parameters', async () => {
      const mia = client();
      await expect(
        mia.integrations.edit('acme/api', 'issue-tracker-b', { url: 'https://jira.test', active: true } as never),
      ).rejects.toMatchObject({ status: 400, body: { error: 'username is missing, password is missing' } });
      expect(await mia.integrations.all('acme/api')).toEqual([]);
    });

    it('keeps the transition settings and never echoes the password', async () => {
      const settings = await client().integrations.edit('acme/api', 'issue-tracker-b', {
        ...base,
        api_url: 'https://jira.test/api',
        active: true,
        tracker_issue_transition_automatic: true,
        tracker_issue_transition_id: '21,31',
        commit_events: false,
        comment_on_event_enabled: false,
      });
      expect(settings.properties).toEqual({
        url: 'https://jira.test',
        api_url: 'https://jira.test/api',
        username: 'jira',
        tracker_issue_transition_automatic: true,
        tracker_issue_transition_id: '21,31',
      });
      expect(settings).toMatchObject({ merge_requests_events: true, comment_on_event_enabled: false });
      expect(JSON.stringify(settings)).not.toContain('pw');
    });

    it('DELETE removes all previous settings', async () => {
      const mia = client();
      await mia.integrations.edit('acme/api', 'issue-tracker-b', {
        ...base,
        api_url: 'https://jira.test/api',
        active: true,
        tracker_issue_transition_id: '7',
      });
      await mia.integrations.remove('acme/api', 'issue-tracker-b');
      await expect(mia.integrations.show('acme/api', 'issue-tracker-b')).rejects.toBeInstanceOf(NotFoundError);
      expect(await mia.integrations.all('acme/api')).toEqual([]);
      const again = await mia.integrations.edit('acme/api', 'issue-tracker-b', base);
      expect(again.active).toBe(false);
      expect(again.properties).toEqual({
        url: 'https://jira.test',
        username: 'jira',
        tracker_issue_transition_automatic: false,
        tracker_issue_transition_id: '',
      });
    });
  });

  describe('authentication and permissions (Maintainer or Owner)', () => {
    beforeEach(async () => {
      await client(ADMIN_TOKEN).integrations.edit('acme/api', 'chatops-a', { token: 't' });
    });

    it('answers 401 without a valid token', async () => {
      const anonymous = client('glpat-wrong');
      await expect(anonymous.integrations.all('acme/api')).rejects.toMatchObject({
        constructor: UnauthorizedError,
        body: { message: '401 Unauthorized' },
      });
      await expect(anonymous.integrations.edit('acme/api', 'chatops-a', { token: 'x' })).rejects.toBeInstanceOf(
        UnauthorizedError,
      );
    });

    it('answers 403 to a developer, for reads as well as writes', async () => {
      const alice = client(USER_TOKEN);
      for (const call of [
        () => alice.integrations.all('acme/api'),
        () => alice.integrations.show('acme/api', 'chatops-a'),
        () => alice.integrations.edit('acme/api', 'chatops-a', { token: 'x' }),
        () => alice.integrations.remove('acme/api', 'chatops-a'),
      ]) {
        await expect(call()).rejects.toMatchObject({ constructor: ForbiddenError, body: { message: '403 Forbidden' } });
      }
      expect((await client().integrations.show('acme/api', 'chatops-a')).properties).toEqual({ token: 't' });
    });

    it('answers 404 for a project the caller cannot see, an unknown project, an unconfigured service or slug', async () => {
      const olaf = client(OUTSIDER_TOKEN);
      await expect(olaf.integrations.all('acme/api')).rejects.toMatchObject({
        constructor: NotFoundError,
        body: { message: '404 Project Not Found' },
      });
      await expect(olaf.integrations.edit('acme/api', 'chatops-a', { token: 'x' })).rejects.toBeInstanceOf(
        NotFoundError,
      );
      const mia = client();
      await expect(mia.integrations.show('acme/nope', 'chatops-a')).rejects.toMatchObject({
        body: { message: '404 Project Not Found' },
      });
      await expect(mia.integrations.remove('acme/api', 'external-wiki')).rejects.toMatchObject({
        constructor: NotFoundError,
        body: { message: '404 Service Not Found' },
      });
      const unknown = await request(`${forge.sandbox.url}/api/v4/projects/1/services/no-such-service`, {
        headers: { 'private-token': MAINTAINER_TOKEN },
      });
      expect(unknown.statusCode).toBe(404);
      expect(await unknown.body.json()).toEqual({ error: '404 Not Found' });
    });

    it('sends the slug and project as encoded path segments', async () => {
      await client().integrations.show('acme/api', 'chatops-a');
      const log = await request(`${forge.sandbox.url}/__sandbox/requests?method=GET&path=services`);
      const entries = (await log.body.json()) as { path: string; status: number }[];
      expect(entries.map((e) => [e.path, e.status])).toEqual([['/api/v4/projects/acme%2Fapi/services/chatops-a', 200]]);
    });
  });
});

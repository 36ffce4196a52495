import { parseWorld } from '../sandbox/world';
import { RECORDED_TOKEN, RecordedWorld, REPLACED_SECRET } from './recorded-world';
import { type Answer, recordingClient, UnrecordedReadError } from './recording-client';
import type { GitlabClient } from '../gitlab/client';

const project = {
  id: 1,
  path: 'api',
  path_with_namespace: 'acme/api',
  name: 'API',
  description: null,
  visibility: 'private',
  archived: false,
  default_branch: 'main',
  request_access_enabled: true,
  created_at: '2025-01-01T00:00:00.000Z',
  last_activity_at: '2025-01-01T00:00:00.000Z',
  namespace: { id: 10, path: 'acme', full_path: 'acme', kind: 'group' },
};
const group = {
  id: 10,
  path: 'acme',
  full_path: 'acme',
  name: 'Acme',
  description: '',
  visibility: 'private',
  request_access_enabled: true,
  created_at: '2025-01-01T00:00:00.000Z',
};
const job = (id: number, name: string, pipeline: number, fields: Record<string, unknown> = {}) => ({
  id,
  name,
  stage: 'test',
  status: 'failed',
  ref: 'main',
  tag: false,
  allow_failure: false,
  created_at: '2025-06-01T00:00:00.000Z',
  started_at: null,
  finished_at: '2025-06-01T01:00:00.000Z',
  pipeline: { id: pipeline, project_id: 1, ref: 'main', sha: 'a'.repeat(40), status: 'failed' },
  user: { id: 2, username: 'alice', name: 'Alice', state: 'active' },
  ...fields,
});
const answer = (resource: string, method: string, args: unknown[], value: unknown): Answer => ({
  resource,
  method,
  args,
  value,
});

const answers: Answer[] = [
  answer('users', 'current', [], {
    id: 1,
    username: 'bot',
    name: 'Bot',
    state: 'active',
    is_admin: true,
    email: 'bot@acme.com',
  }),
  answer('projects', 'show', ['acme/api'], project),
  answer('groups', 'show', ['acme'], group),
  answer('jobs', 'allForPipeline', ['acme/api', 100, {}], job(990, 'unit', 100)),
  answer('jobs', 'allForPipeline', ['acme/api', 100, {}], job(991, 'unit', 100)),
  // Listed with pipeline 100's jobs, of pipeline 101: its child.
  answer('jobs', 'allForPipeline', ['acme/api', 100, {}], job(1010, 'docs', 101)),
  answer('jobs', 'traceTail', ['acme/api', 991, 4096], {
    found: true,
    text: 'token glpat-abcdefghijklmnop1234 leaked\nconnection reset\n',
  }),
  answer(
    'integrations',
    'all',
    [1],
    [{ id: 7, slug: 'chat-collab-a', active: true, push_events: false, pipeline_events: true }],
  ),
  answer('integrations', 'show', [1, 'chat-collab-a'], {
    id: 7,
    slug: 'chat-collab-a',
    active: true,
    properties: { webhook: 'https://chat.example/hooks/SECRET', notify_only_broken_pipelines: true },
  }),
  answer('groupAccessRequests', 'all', ['acme'], {
    id: 3,
    username: 'carol',
    name: 'Carol Danvers',
    state: 'active',
    requested_at: '2025-06-01T00:00:00.000Z',
  }),
  answer('users', 'show', [3], {
    id: 3,
    username: 'carol',
    name: 'Carol Danvers',
    state: 'active',
    email: 'carol@acme.com',
    two_factor_enabled: true,
    is_admin: false,
  }),
];

describe('RecordedWorld', () => {
  const facts = { token: RECORDED_TOKEN, levels: { group: new Map(), project: new Map() } };

  it('asks for nothing more once every project, group and user it names is read', () => {
    expect(new RecordedWorld(answers, facts).missing(100)).toEqual({ projects: [], groups: [], users: [], cut: 0 });
    const partial = new RecordedWorld([answers[0], answer('jobs', 'all', ['acme/web', {}], job(1, 'x', 1))], facts);
    expect(partial.missing(100)).toMatchObject({ projects: ['acme/web'] });
  });

  it('builds a world the sandbox takes: the token’s user first with the stand-in token, older attempts retried, a child pipeline under its parent, secrets replaced', () => {
    const world = new RecordedWorld(answers, facts).build('2025-06-02T12:00:00.000Z', { anonymise: false });
    const parsed = parseWorld(world);
    expect(parsed.users.map((user) => [user.username, user.tokens])).toEqual([
      ['bot', [RECORDED_TOKEN]],
      ['alice', []],
      ['carol', []],
    ]);
    expect(parsed.users[2]).toMatchObject({ email: 'carol@acme.com', two_factor: true });
    const [api] = parsed.projects;
    expect(
      api.pipelines.map((pipeline) => [
        pipeline.id,
        pipeline.parent_pipeline,
        pipeline.jobs.map((one) => [one.id, one.retried]),
      ]),
    ).toEqual([
      [
        100,
        undefined,
        [
          [990, true],
          [991, false],
        ],
      ],
      [101, 100, [[1010, false]]],
    ]);
    expect(api.pipelines[0].jobs[1].log).toBe('token glpat-[REDACTED] leaked\nconnection reset\n');
    expect(api.integrations).toEqual([
      {
        id: 7,
        slug: 'chat-collab-a',
        active: true,
        events: { push_events: false, pipeline_events: true },
        properties: { webhook: REPLACED_SECRET, notify_only_broken_pipelines: true },
      },
    ]);
    expect(parsed.groups[0].access_requests).toEqual([{ user: 'carol', requested_at: '2025-06-01T00:00:00.000Z' }]);
    expect(JSON.stringify(world)).not.toMatch(/SECRET|glpat-abc/);
  });

  it('anonymised, replaces names and the part of emails before the @, and keeps usernames and domains', () => {
    const world = new RecordedWorld(answers, facts).build('2025-06-02T12:00:00.000Z', { anonymise: true });
    expect(world.users?.find((user) => user.username === 'carol')).toMatchObject({
      name: 'User 3',
      email: 'user-3@acme.com',
    });
    expect(JSON.stringify(world)).not.toContain('Carol Danvers');
  });
});

describe('recordingClient', () => {
  it('keeps the answers of the reads observers make, and refuses anything else before it is sent', async () => {
    const sent: string[] = [];
    const client = {
      jobs: {
        show: async (ref: string, id: number) => {
          sent.push(`show ${ref} ${id}`);
          return { id };
        },
        retry: async () => {
          sent.push('retry');
          return {};
        },
        all: async function* () {
          sent.push('all');
          yield { id: 1 };
          yield { id: 2 };
        },
      },
    } as unknown as GitlabClient;
    const kept: Answer[] = [];
    const recording = recordingClient(client, kept);
    await recording.jobs.show('acme/api', 5);
    const listed: unknown[] = [];
    for await (const item of recording.jobs.all('acme/api')) listed.push(item);
    expect(() => recording.jobs.retry('acme/api', 5)).toThrow(UnrecordedReadError);
    expect(sent).toEqual(['show acme/api 5', 'all']);
    expect(listed).toEqual([{ id: 1 }, { id: 2 }]);
    expect(kept.map((one) => [one.method, one.value])).toEqual([
      ['show', { id: 5 }],
      ['all', { id: 1 }],
      ['all', { id: 2 }],
    ]);
  });
});

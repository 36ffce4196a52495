import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEMO_WORLD_PATH } from '../index';
import { SandboxState } from '../state';
import { FaultRules } from '../faults';
import { loadWorld, parseWorld, resolveTimestamp, WorldError } from '.';
import { baseWorld, manyTags } from '../../../test/support/world-builders';
import { tempDir } from '../../../test/support/temp';

function writeWorld(text: string): string {
  const path = join(tempDir('world'), 'world.yml');
  writeFileSync(path, text);
  return path;
}

function problems(path: string): string[] {
  try {
    loadWorld(path);
  } catch (error) {
    if (error instanceof WorldError) return error.message.split('\n');
    throw error;
  }
  throw new Error('expected the world to be rejected');
}

describe('loadWorld', () => {
  it('loads the demo world', () => {
    const world = loadWorld(DEMO_WORLD_PATH);
    expect(world.users.map((u) => u.username)).toEqual(expect.arrayContaining(['root', 'alice']));
    expect(world.projects.map((p) => `${p.namespace}/${p.path}`)).toEqual(['acme/api', 'acme/web']);
  });

  it('names file, line, column and key of an unknown key', () => {
    const path = writeWorld(['users:', '  - username: root', '    tokenz: [x]', ''].join('\n'));
    expect(problems(path)).toEqual([`${path}:3:5 users[0].tokenz: unknown key "tokenz"; did you mean "tokens"?`]);
  });

  it('names the line of a bad value, then of a bad reference', () => {
    const path = writeWorld(
      [
        'users:',
        '  - username: root',
        'projects:',
        '  - path: api',
        '    namespace: nowhere',
        '    pipelines:',
        '      - jobs:',
        '          - name: test',
        '            status: exploded',
        '',
      ].join('\n'),
    );
    expect(problems(path)).toEqual([
      expect.stringMatching(
        new RegExp(`^${path}:9:21 projects\\[0\\]\\.pipelines\\[0\\]\\.jobs\\[0\\]\\.status: Invalid option`),
      ),
    ]);
    // References are checked once the shapes are valid.
    const fixed = writeWorld(
      ['users:', '  - username: root', 'projects:', '  - path: api', '    namespace: nowhere', ''].join('\n'),
    );
    expect(problems(fixed)).toEqual([`${fixed}:5:16 projects[0].namespace: unknown namespace nowhere`]);
  });

  it('reports YAML syntax errors with their position', () => {
    const path = writeWorld('users:\n  - username: [unclosed\n');
    expect(problems(path)[0]).toMatch(new RegExp(`^${path}:\\d+:\\d+ \\(syntax\\): `));
  });

  it('refuses nested aliases that expand exponentially, at the alias, instead of running out of memory', () => {
    const bomb = [
      'a: &a [x, x, x, x, x, x, x, x, x, x]',
      ...'bcdefgh'.split('').map((name, i) => `${name}: &${name} [${Array(10).fill(`*${'abcdefgh'[i]}`).join(', ')}]`),
      'users: *h',
      '',
    ].join('\n');
    expect(problems(writeWorld(bomb))[0]).toMatch(/:\d+:\d+ .*aliases here expand to more than 1000 copies/);
  });

  it('names the file it cannot read', () => {
    expect(problems('/nonexistent/world.yml')[0]).toBe(
      '/nonexistent/world.yml:1:1 (file): cannot read the world file: no such file',
    );
  });
});

describe('worlds built in code', () => {
  it('validates them and assigns ids around explicit ones', () => {
    const world = parseWorld(
      baseWorld({
        projects: [
          { id: 1, path: 'api', namespace: 'acme', registry: [{ id: 7, tags: manyTags(2000) }, { tags: [] }] },
        ],
      }),
    );
    const state = new SandboxState(world, new FaultRules());
    expect([...state.repositories.keys()]).toEqual([7, 1]);
    expect(state.tags(7)).toHaveLength(2000);
  });

  it('rejects a bad world object with the key path', () => {
    expect(() => parseWorld({ users: [{ username: 'x', admin: 'yes' }] } as never)).toThrow(/users\[0\]\.admin/);
  });

  it('resolves relative timestamps against the clock start', () => {
    const start = Date.parse('2025-01-10T00:00:00Z');
    expect(resolveTimestamp('now-3d', start)).toBe('2025-01-07T00:00:00.000Z');
    expect(resolveTimestamp('now+2w', start)).toBe('2025-01-24T00:00:00.000Z');
    expect(resolveTimestamp('2024-05-01T10:00:00+02:00', start)).toBe('2024-05-01T08:00:00.000Z');
  });
});

describe('the generate key', () => {
  it('appends numbered groups, subgroups and projects after the declared ones, with failed jobs and archived projects', () => {
    const world = parseWorld(
      baseWorld({
        generate: {
          groups: 2,
          subgroups_per_group: 1,
          projects_per_group: 2,
          failed_jobs_per_project: 3,
          archived_projects_per_group: 1,
        },
      }),
    );
    expect(world.groups.map((g) => (g.parent ? `${g.parent}/${g.path}` : g.path))).toEqual([
      'acme',
      'group-01',
      'group-01/sub-01',
      'group-02',
      'group-02/sub-01',
    ]);
    expect(world.projects.map((p) => `${p.namespace}/${p.path}${p.archived ? ' (archived)' : ''}`)).toEqual([
      'acme/api',
      'acme/web',
      'group-01/project-01',
      'group-01/project-02 (archived)',
      'group-01/sub-01/project-01',
      'group-01/sub-01/project-02 (archived)',
      'group-02/project-01',
      'group-02/project-02 (archived)',
      'group-02/sub-01/project-01',
      'group-02/sub-01/project-02 (archived)',
    ]);
    const state = new SandboxState(world, new FaultRules());
    expect([...state.jobs.values()].filter((j) => j.status === 'failed')).toHaveLength(8 * 3);
    expect(state.project('group-02/sub-01/project-02')?.archived).toBe(true);
  });

  it('reads it from a world file, and names a generated path that is already taken and an unknown member', () => {
    const path = writeWorld(
      [
        'users:',
        '  - username: root',
        'groups:',
        '  - path: team-02',
        'generate:',
        '  groups: 3',
        '  projects_per_group: 1',
        '  path_prefix: team',
        '  members: [{ user: nobody, access_level: developer }]',
        '',
      ].join('\n'),
    );
    expect(problems(path)).toEqual([
      `${path}:8:16 generate.path_prefix: namespace team-02 already exists`,
      `${path}:9:21 generate.members[0].user: unknown user nobody`,
    ]);
  });

  it('puts the generated groups under a declared parent, so one glob covers them', () => {
    const world = parseWorld(
      baseWorld({
        generate: { parent: 'acme', groups: 2, subgroups_per_group: 1, projects_per_group: 1, path_prefix: 'team' },
      }),
    );
    expect(world.groups.map((g) => (g.parent ? `${g.parent}/${g.path}` : g.path))).toEqual([
      'acme',
      'acme/team-01',
      'acme/team-01/sub-01',
      'acme/team-02',
      'acme/team-02/sub-01',
    ]);
    expect(world.projects.map((p) => `${p.namespace}/${p.path}`).slice(2)).toEqual([
      'acme/team-01/project-01',
      'acme/team-01/sub-01/project-01',
      'acme/team-02/project-01',
      'acme/team-02/sub-01/project-01',
    ]);
    const state = new SandboxState(world, new FaultRules());
    expect(state.project('acme/team-02/sub-01/project-01')).toBeDefined();
  });

  it('names an unknown parent and a generated path under the parent that is already taken', () => {
    const path = writeWorld(
      [
        'users:',
        '  - username: root',
        'groups:',
        '  - path: big',
        '  - { path: team-02, parent: big }',
        'generate:',
        '  parent: huge',
        '  groups: 3',
        '  projects_per_group: 1',
        '  path_prefix: team',
        '',
      ].join('\n'),
    );
    expect(problems(path)).toEqual([`${path}:7:11 generate.parent: unknown parent group huge`]);
    const taken = writeWorld(readFileSync(path, 'utf8').replace('parent: huge', 'parent: big'));
    expect(problems(taken)).toEqual([`${taken}:10:16 generate.path_prefix: namespace big/team-02 already exists`]);
  });

  it('refuses to generate more than 200,000 projects', () => {
    expect(() => parseWorld({ generate: { groups: 1_000, subgroups_per_group: 9, projects_per_group: 21 } })).toThrow(
      /generate: generates more than 200,000 projects/,
    );
  });
});

describe('project hooks in the world', () => {
  it('seeds them with the forge defaults, keeps explicit ids and fills the gaps', () => {
    const world = parseWorld(
      baseWorld({
        settings: { hook_timeout_ms: 250 },
        projects: [
          {
            id: 1,
            path: 'api',
            namespace: 'acme',
            hooks: [
              {
                id: 2,
                url: 'https://hooks.example.test/ci',
                job_events: true,
                token: 'secret-token',
                custom_headers: { 'X-Team': 'ci' },
              },
              { url: 'http://127.0.0.1:9/other', name: 'other' },
            ],
          },
        ],
      }),
    );
    const state = new SandboxState(world, new FaultRules());
    const hooks = state.hooks.of(1);
    expect(
      hooks.map((h) => [h.id, h.url, h.token, h.events.push_events, h.events.job_events, h.enable_ssl_verification]),
    ).toEqual([
      [1, 'http://127.0.0.1:9/other', null, true, false, true],
      [2, 'https://hooks.example.test/ci', 'secret-token', true, true, true],
    ]);
    expect(hooks[1].custom_headers).toEqual({ 'X-Team': 'ci' });
    expect(state.hooks.timeoutMs).toBe(250);
    // The dump never carries the token nor header values.
    expect(JSON.stringify(state.dump())).not.toContain('secret-token');
    expect(JSON.stringify(state.dump())).not.toContain('"ci"');
  });

  it('refuses a hook URL that is not http(s), and an unknown key, naming the path', () => {
    const path = writeWorld(
      [
        'users: [{ username: root }]',
        'projects:',
        '  - path: api',
        '    namespace: root',
        '    hooks:',
        '      - url: ftp://files.example.test/drop',
        '      - url: https://ok.example.test/',
        '        job_event: true',
        '',
      ].join('\n'),
    );
    expect(problems(path)).toEqual([
      `${path}:6:14 projects[0].hooks[0].url: must be an http(s) URL`,
      `${path}:8:9 projects[0].hooks[1].job_event: unknown key "job_event"; did you mean "job_events"?`,
    ]);
  });
});

describe('credentials in the world', () => {
  it('seeds tokens with their details, bot users for project and group tokens, deploy tokens and variables', () => {
    const base = baseWorld();
    const world = parseWorld({
      ...base,
      users: [
        ...(base.users ?? []),
        {
          id: 9,
          username: 'ci',
          tokens: [
            'glpat-plain-value',
            { token: 'glpat-detailed', id: 40, name: 'bot', scopes: ['read_api'], expires_at: 'now+10d' },
          ],
        },
      ],
      groups: [{ id: 10, path: 'acme', variables: [{ key: 'SHARED', value: 'v' }] }],
      projects: [
        {
          id: 1,
          path: 'api',
          namespace: 'acme',
          access_tokens: [
            {
              token: 'glpat-project-bot',
              name: 'deploy',
              access_level: 'developer',
              expires_at: '2025-07-01T15:00:00Z',
            },
          ],
          deploy_tokens: [{ token: 'gldt-pull', name: 'pull', scopes: ['read_registry'] }],
          variables: [{ key: 'TOKEN', value: 'masked-value-1', masked: true, environment_scope: 'production' }],
        },
      ],
    });
    const state = new SandboxState(world, new FaultRules());
    const tokens = state.accessTokens;
    expect(tokens.byTokenValue('glpat-plain-value')).toMatchObject({
      user_id: 9,
      name: 'ci-token-1',
      scopes: ['api'],
      expires_at: null,
    });
    // Relative expiries are days: now+10d from 2025-06-02T12:00Z is 2025-06-12, a timestamp is cut to its day.
    expect(tokens.byTokenValue('glpat-detailed')).toMatchObject({
      id: 40,
      name: 'bot',
      scopes: ['read_api'],
      expires_at: '2025-06-12',
    });
    const projectToken = tokens.byTokenValue('glpat-project-bot')!;
    expect(projectToken).toMatchObject({ name: 'deploy', expires_at: '2025-07-01', scopes: ['api'] });
    const bot = state.users.get(projectToken.user_id)!;
    expect(bot).toMatchObject({
      user_type: 'project_bot',
      name: 'deploy',
      username: expect.stringMatching(/^project_1_bot_[0-9a-f]{32}$/) as string,
    });
    expect(state.member('project', 1, bot.id)?.access_level).toBe(30);
    expect(state.deployTokens.of('project', 1)).toMatchObject([
      { name: 'pull', username: expect.stringMatching(/^gitlab\+deploy-token-\d+$/) as string, expires_at: null },
    ]);
    expect(state.ciVariables.of('project', 1)).toMatchObject([
      { key: 'TOKEN', masked: true, environment_scope: 'production', variable_type: 'env_var' },
    ]);
    expect(state.ciVariables.of('group', 10)).toMatchObject([{ key: 'SHARED', value: 'v', masked: false }]);
    expect(JSON.stringify(state.dump())).not.toMatch(/glpat-|gldt-|masked-value-1/);
  });

  it('names a token value used twice, a key repeated in one environment scope and a value that cannot be masked', () => {
    const path = writeWorld(
      [
        'users: [{ username: root, tokens: [glpat-shared] }]',
        'projects:',
        '  - path: api',
        '    namespace: root',
        '    access_tokens: [{ token: glpat-shared, name: bot }]',
        '    variables:',
        '      - { key: TOKEN, value: a-long-value }',
        '      - { key: TOKEN, value: masked, masked: true }',
        '',
      ].join('\n'),
    );
    expect(problems(path)).toEqual([
      `${path}:5:30 projects[0].access_tokens[0].token: token already belongs to another user`,
      `${path}:8:16 projects[0].variables[1].key: variable TOKEN already exists in environment scope *`,
      `${path}:8:30 projects[0].variables[1].value: cannot be masked: it must be at least 8 characters`,
    ]);
  });
});

import { FaultRules } from '../faults';
import { integrationsOf } from '../integrations-state';
import { SandboxState } from '../state';
import { parseWorld, WorldError } from '.';
import { apiProject, baseWorld } from '../../../test/support/world-builders';

function problems(world: Parameters<typeof parseWorld>[0]): string[] {
  try {
    parseWorld(world);
  } catch (error) {
    if (error instanceof WorldError) return error.message.split('\n');
    throw error;
  }
  throw new Error('expected the world to be rejected');
}

describe('approval settings, approval rules and integrations in the world', () => {
  const world = baseWorld({
    projects: [
      apiProject({
        protected_branches: [{ id: 7, name: 'main' }],
        approval_settings: { approvals_before_merge: 2, merge_requests_author_approval: true },
        approval_rules: [
          {
            id: 40,
            name: 'security',
            approvals_required: 1,
            users: ['mia'],
            groups: ['acme'],
            protected_branches: ['main'],
          },
          { name: 'everyone', rule_type: 'regular' },
        ],
        integrations: [
          {
            id: 9,
            slug: 'chat-collab-a',
            properties: { webhook: 'https://chat.example/hook/secret', notify_only_broken_pipelines: true },
            events: { push_events: false },
          },
          { slug: 'emails-on-push', active: false, properties: { recipients: 'ops@acme.test' } },
        ],
      }),
    ],
  });

  it('seeds them as the API would have left them, keeping explicit ids', () => {
    const state = new SandboxState(parseWorld(world), new FaultRules());
    const approvals = state.approvals.project(1);
    expect(approvals.settings).toEqual({
      approvals_before_merge: 2,
      reset_approvals_on_push: true,
      disable_overriding_approvers_per_merge_request: false,
      merge_requests_author_approval: true,
      merge_requests_disable_committers_approval: false,
      require_password_to_approve: false,
    });
    expect(approvals.rules).toEqual([
      {
        id: 40,
        name: 'security',
        rule_type: 'regular',
        approvals_required: 1,
        user_ids: [2],
        group_ids: [10],
        protected_branch_ids: [7],
      },
      {
        id: 41,
        name: 'everyone',
        rule_type: 'regular',
        approvals_required: 0,
        user_ids: [],
        group_ids: [],
        protected_branch_ids: [],
      },
    ]);
    const [chat, mail] = integrationsOf(state).of(1);
    expect(chat).toMatchObject({
      id: 9,
      slug: 'chat-collab-a',
      active: true,
      // The service's default under the world's properties.
      properties: {
        webhook: 'https://chat.example/hook/secret',
        notify_only_broken_pipelines: true,
        branches_to_be_notified: 'default',
      },
    });
    // Flags the service takes are on unless the world turns them off; flags it does not take are off.
    expect(chat.events).toMatchObject({
      push_events: false,
      issues_events: true,
      pipeline_events: true,
      job_events: false,
    });
    expect(mail).toMatchObject({
      id: 10,
      slug: 'emails-on-push',
      active: false,
      properties: { recipients: 'ops@acme.test', branches_to_be_notified: 'all' },
    });
  });

  it('leaves a project the world says nothing of with the forge defaults, as before', () => {
    const state = new SandboxState(parseWorld(baseWorld()), new FaultRules());
    expect(state.approvals.dump()).toEqual({});
    expect(integrationsOf(state).of(1)).toEqual([]);
  });

  it('names unknown approvers, unprotected branches, duplicates and parameters a service does not take', () => {
    const bad = baseWorld({
      projects: [
        apiProject({
          approval_rules: [
            { name: 'a', users: ['nobody'], groups: ['nowhere'], protected_branches: ['main'] },
            { name: 'a' },
          ],
          integrations: [
            { slug: 'chat-collab-a', properties: { webhook: 'https://x.example', colour: 'red' } },
            { slug: 'chat-collab-a', properties: { webhook: 'https://y.example' } },
          ],
        }),
      ],
    });
    expect(problems(bad)).toEqual([
      expect.stringMatching(
        /^<world> projects\[0\]\.integrations\[0\]\.properties\.colour: chat-collab-a has no parameter colour; it takes webhook, /,
      ),
      '<world> projects[0].approval_rules[0].users[0]: unknown user nobody',
      '<world> projects[0].approval_rules[0].groups[0]: unknown group nowhere',
      '<world> projects[0].approval_rules[0].protected_branches[0]: the project protects no branch main',
      '<world> projects[0].approval_rules[1].name: duplicate approval rule a',
      '<world> projects[0].integrations[1].slug: integration chat-collab-a is set twice',
    ]);
  });
});

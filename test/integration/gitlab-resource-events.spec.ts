import { request } from 'undici';
import { parseWorld, type World, WorldError } from '../../src/sandbox';
import {
  acmeGroup,
  ADMIN_TOKEN,
  aProject,
  apiProject,
  BASE_NOW,
  baseWorld,
  OUTSIDER_TOKEN,
  USER_TOKEN,
  webProject,
} from '../support/world-builders';
import { GitlabClient, NotFoundError, type ResourceLabelEvent, UnauthorizedError } from '../../src/gitlab';
import { collect, useSandboxClients } from '../support/sandbox-clients';

/** Label events of issues, merge requests and epics, weight events of issues, seeded from the world. */

const ISSUE_ID = 700;
const MR_ID = 800;
const EPIC_ID = 900;
const DAY = 86_400_000;
const at = (daysAgo: number): string => new Date(Date.parse(BASE_NOW) - daysAgo * DAY).toISOString();

function world(): World {
  return baseWorld({
    groups: [
      acmeGroup({
        epics: [
          {
            id: EPIC_ID,
            iid: 1,
            label_events: [{ id: 60, user: 'mia', action: 'add', label: 'roadmap', created_at: 'now-1d' }],
          },
        ],
      }),
    ],
    projects: [
      apiProject({
        issues: [
          {
            id: ISSUE_ID,
            iid: 5,
            title: 'Crash on start',
            label_events: [
              // Listed oldest first whatever the file order.
              { id: 12, user: 'alice', action: 'remove', label: 'bug', created_at: 'now-1d' },
              {
                id: 11,
                user: 'mia',
                action: 'add',
                label: { name: 'bug', color: '#d9534f', description: 'Something is broken' },
                created_at: 'now-3d',
              },
            ],
            weight_events: [
              { id: 21, user: 'mia', weight: 3, created_at: 'now-3d' },
              { id: 22, user: 'alice', weight: 5, created_at: 'now-2d' },
            ],
          },
          {
            iid: 6,
            label_events: Array.from({ length: 130 }, (_, i) => ({
              user: 'alice',
              action: 'add' as const,
              label: `l${i}`,
            })),
          },
        ],
        merge_requests: [
          {
            id: MR_ID,
            iid: 2,
            label_events: [{ id: 40, user: 'alice', action: 'add', label: 'bug', created_at: 'now-2d' }],
          },
        ],
      }),
      webProject({ visibility: 'public', issues: [{ iid: 1 }] }),
    ],
  });
}

describe('GitlabClient label and weight events against the sandbox', () => {
  const forge = useSandboxClients(world);
  const client = (token?: string): GitlabClient => forge.client(token);

  const alice = { id: 3, username: 'alice', name: 'Alice Developer', state: 'active' as const };
  const mia = { id: 2, username: 'mia', name: 'Mia Maintainer', state: 'active' as const };

  it('lists and shows an issue’s label events, oldest first, with the documented fields', async () => {
    const c = client(USER_TOKEN);
    const events = await collect(c.issueLabelEvents.all('acme/api', 5));
    // Labels are shared by name: the epic's `roadmap` (groups are seeded first) is 1, `bug` is 2.
    const bug = { id: 2, name: 'bug', color: '#d9534f', description: 'Something is broken' };
    expect(events).toEqual<ResourceLabelEvent[]>([
      {
        id: 11,
        user: { ...mia, avatar_url: expect.any(String), web_url: `${forge.sandbox.url}/mia` },
        created_at: at(3),
        resource_type: 'Issue',
        resource_id: ISSUE_ID,
        label: bug,
        action: 'add',
      },
      {
        id: 12,
        user: { ...alice, avatar_url: expect.any(String), web_url: `${forge.sandbox.url}/alice` },
        created_at: at(1),
        resource_type: 'Issue',
        resource_id: ISSUE_ID,
        label: bug,
        action: 'remove',
      },
    ]);
    expect(await c.issueLabelEvents.show(1, 5, 12)).toEqual(events[1]);
  });

  it('lists and shows a merge request’s and an epic’s label events', async () => {
    const c = client(USER_TOKEN);
    const mrEvents = await collect(c.mergeRequestLabelEvents.all('acme/api', 2));
    expect(mrEvents.map((e) => [e.id, e.resource_type, e.resource_id, e.label.id, e.label.name, e.created_at])).toEqual(
      [[40, 'MergeRequest', MR_ID, 2, 'bug', at(2)]],
    );
    expect(await c.mergeRequestLabelEvents.show(1, 2, 40)).toEqual(mrEvents[0]);

    const epicEvents = await collect(c.epicLabelEvents.all('acme', EPIC_ID));
    expect(epicEvents).toEqual([
      expect.objectContaining({
        id: 60,
        resource_type: 'Epic',
        resource_id: EPIC_ID,
        action: 'add',
        label: { id: 1, name: 'roadmap', color: '#6699cc', description: null },
      }),
    ]);
    expect(await c.epicLabelEvents.show(10, EPIC_ID, 60)).toEqual(epicEvents[0]);
  });

  it('lists and shows an issue’s weight events', async () => {
    const c = client(USER_TOKEN);
    const events = await collect(c.issueWeightEvents.all('acme/api', 5));
    expect(events).toEqual([
      { id: 21, user: expect.objectContaining(mia), created_at: at(3), issue_id: ISSUE_ID, weight: 3 },
      { id: 22, user: expect.objectContaining(alice), created_at: at(2), issue_id: ISSUE_ID, weight: 5 },
    ]);
    expect(await c.issueWeightEvents.show(1, 5, 22)).toEqual(events[1]);
    expect(await collect(c.issueWeightEvents.all('acme/web', 1))).toEqual([]);
  });

  it('pages through a long history', async () => {
    const events = await collect(client(USER_TOKEN).issueLabelEvents.all(1, 6));
    expect(events).toHaveLength(130);
    expect(new Set(events.map((e) => e.label.name)).size).toBe(130);
  });

  it('answers 404 for unknown issues, merge requests, epics and events, and events of another resource', async () => {
    const c = client(ADMIN_TOKEN);
    const noIssue = await c.issueLabelEvents
      .all(1, 99)
      .next()
      .catch((e: unknown) => e);
    expect((noIssue as NotFoundError).body).toEqual({ message: '404 Issue Not Found' });
    await expect(c.mergeRequestLabelEvents.all(1, 99).next()).rejects.toThrow(NotFoundError);
    await expect(c.epicLabelEvents.all('acme', 1).next()).rejects.toThrow(NotFoundError); // an iid, not the id
    await expect(c.issueWeightEvents.all(2, 5).next()).rejects.toThrow(NotFoundError);

    const noEvent = await c.issueLabelEvents.show(1, 5, 999).catch((e: unknown) => e);
    expect((noEvent as NotFoundError).body).toEqual({ message: '404 Not found' });
    await expect(c.issueLabelEvents.show(1, 5, 40)).rejects.toThrow(NotFoundError); // the merge request's event
    await expect(c.mergeRequestLabelEvents.show(1, 2, 11)).rejects.toThrow(NotFoundError);
    await expect(c.epicLabelEvents.show('acme', EPIC_ID, 11)).rejects.toThrow(NotFoundError);
    await expect(c.issueWeightEvents.show(1, 5, 999)).rejects.toThrow(NotFoundError);
  });

  it('answers 401 without a token, 404 to outsiders of private projects and groups, 400 for a non-integer iid', async () => {
    await expect(client('glpat-nobody').issueLabelEvents.all(1, 5).next()).rejects.toThrow(UnauthorizedError);
    const olaf = client(OUTSIDER_TOKEN);
    await expect(olaf.issueLabelEvents.all(1, 5).next()).rejects.toThrow(NotFoundError);
    await expect(olaf.issueWeightEvents.show(1, 5, 21)).rejects.toThrow(NotFoundError);
    await expect(olaf.epicLabelEvents.all('acme', EPIC_ID).next()).rejects.toThrow(NotFoundError);
    // A public project's history is readable by anyone signed in.
    expect(await collect(olaf.issueLabelEvents.all('acme/web', 1))).toEqual([]);

    const response = await request(`${forge.sandbox.url}/api/v4/projects/1/issues/abc/resource_label_events`, {
      headers: { 'private-token': USER_TOKEN },
    });
    expect(response.statusCode).toBe(400);
    expect(await response.body.json()).toEqual({ error: 'issue_iid is invalid' });
  });

  it('validates history in the world file: known users, unique iids', () => {
    const bad = baseWorld({
      projects: [aProject('api', { issues: [{ iid: 1, weight_events: [{ user: 'ghost', weight: 1 }] }, { iid: 1 }] })],
    });
    expect(() => parseWorld(bad)).toThrow(WorldError);
    expect(() => parseWorld(bad)).toThrow(/issues\[0\]\.weight_events\[0\]\.user: unknown user ghost/);
    expect(() => parseWorld(bad)).toThrow(/issues\[1\]\.iid: duplicate issue iid 1/);
  });
});

import { Gitlab } from '@gitbeaker/rest';
import { startSandbox, type RunningSandbox } from '../../src/sandbox';
import { integrationsOf } from '../../src/sandbox/integrations-state';
import { apiClient } from '../support/sandbox-http';
import { baseWorld, MAINTAINER_TOKEN, USER_TOKEN } from '../support/world-builders';

/**
 * Integrations as the forge changes them (GitLab's "Project integrations API"): a PUT changes only the parameters
 * it is given and keeps the others, a person's included; every PUT still names the required ones (Grape's
 * `requires`); `/integrations` is the forge's current name for `/services`, served by the same handlers.
 */

const RECIPIENTS = 'ops@acme.test,dev@acme.test';

describe('sandbox forge: integrations, changed parameter by parameter', () => {
  let sandbox: RunningSandbox;
  const mia = () => apiClient(sandbox.url, MAINTAINER_TOKEN);
  const put = (slug: string, body: Record<string, unknown>, base = 'services') =>
    mia()(`/projects/1/${base}/${slug}`, { method: 'PUT', body });

  beforeEach(async () => {
    sandbox = await startSandbox({ world: baseWorld() });
  });
  afterEach(() => sandbox.close());

  it('a PUT of one parameter keeps the others a person set, the event flags too', async () => {
    const person = await put('pipelines-email', {
      recipients: RECIPIENTS,
      add_pusher: true,
      branches_to_be_notified: 'all',
      notify_only_broken_pipelines: false,
      pipeline_events: false,
    });
    expect(person.status).toBe(200);
    const repair = await put('pipelines-email', { recipients: RECIPIENTS, notify_only_broken_pipelines: true });
    expect(repair).toMatchObject({
      status: 200,
      json: {
        id: (person.json as { id: number }).id,
        pipeline_events: false,
        properties: {
          recipients: RECIPIENTS,
          add_pusher: true,
          branches_to_be_notified: 'all',
          notify_only_broken_pipelines: true,
        },
      },
    });
    expect(integrationsOf(sandbox.state).get(1, 'pipelines-email')?.properties).toEqual({
      recipients: RECIPIENTS,
      add_pusher: true,
      branches_to_be_notified: 'all',
      notify_only_broken_pipelines: true,
    });
  });

  it('keeps what a later PUT leaves out, and takes a new secret without showing it', async () => {
    await put('chat-notifications-a', { webhook: 'https://chat.test/hooks/secret-1', channel: '#ops' });
    const renamed = await put('chat-notifications-a', {
      webhook: 'https://chat.test/hooks/secret-1',
      username: 'forgewarden',
    });
    expect((renamed.json as { properties: unknown }).properties).toMatchObject({
      channel: '#ops',
      username: 'forgewarden',
    });
    await put('issue-tracker-b', {
      url: 'https://jira.test',
      username: 'jira',
      password: 'pw-1',
      active: true,
      tracker_issue_transition_id: '7',
    });
    const update = await put('issue-tracker-b', {
      url: 'https://jira.test',
      username: 'jira',
      password: 'pw-2',
      active: true,
    });
    expect(update.text).not.toContain('pw-');
    expect(integrationsOf(sandbox.state).get(1, 'issue-tracker-b')?.properties).toMatchObject({
      password: 'pw-2',
      tracker_issue_transition_id: '7',
    });
  });

  it('asks every PUT for the required parameters, an update too, and changes nothing without them', async () => {
    await put('pipelines-email', { recipients: RECIPIENTS, add_pusher: true });
    expect(await put('pipelines-email', { add_pusher: false })).toMatchObject({
      status: 400,
      json: { error: 'recipients is missing' },
    });
    expect(integrationsOf(sandbox.state).get(1, 'pipelines-email')?.properties).toMatchObject({ add_pusher: true });
  });

  it('serves /integrations beside /services with the same handlers', async () => {
    const created = await put('external-wiki', { external_wiki_url: 'https://wiki.test' }, 'integrations');
    expect(created.status).toBe(200);
    const [services, integrations] = [await mia()('/projects/1/services'), await mia()('/projects/1/integrations')];
    expect(integrations.json).toEqual(services.json);
    expect(integrations.json).toMatchObject([{ slug: 'external-wiki', active: true }]);
    expect((await mia()('/projects/acme%2Fapi/integrations/external-wiki')).json).toEqual(created.json);
    expect(await apiClient(sandbox.url, USER_TOKEN)('/projects/1/integrations')).toMatchObject({ status: 403 });
    expect(await mia()('/projects/1/integrations/no-such-service')).toMatchObject({
      status: 404,
      json: { error: '404 Not Found' },
    });
    expect((await mia()('/projects/1/integrations/external-wiki', { method: 'DELETE' })).status).toBe(204);
    expect(await mia()('/projects/1/services/external-wiki')).toMatchObject({
      status: 404,
      json: { message: '404 Service Not Found' },
    });
  });

  it('answers a peer client (@gitbeaker/rest): Integrations.all and Integrations.show', async () => {
    await put('chatops-a', { token: 'ops-token' });
    const api = new Gitlab({ host: sandbox.url, token: MAINTAINER_TOKEN });
    expect(await api.Integrations.all(1)).toMatchObject([{ slug: 'chatops-a', active: true }]);
    expect(await api.Integrations.show('acme/api', 'chatops-a' as never)).toMatchObject({
      slug: 'chatops-a',
      properties: { token: 'ops-token' },
    });
    const paths = sandbox.state.requestLog.filter((entry) => entry.method === 'GET').map((entry) => entry.path);
    expect(paths).toEqual(['/api/v4/projects/1/integrations', '/api/v4/projects/acme%2Fapi/integrations/chatops-a']);
  });
});

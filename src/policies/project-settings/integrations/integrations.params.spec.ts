import {
  anIntegration,
  aPolicy,
  aProjectSnapshot,
  aSnapshot,
  NOW,
} from '../../../../test/support/builders/project-settings';
import { decideProjectSettings } from '../project-settings.decide';
import { integrationRequest, setIntegrationTarget } from './integrations.params';

const WEBHOOK = 'https://chat.example.com/hooks/T0/B0/s3cr3t-webhook';

describe('project_settings params: integrations', () => {
  it('takes secrets from the configuration when acting, and a second pass after applying decides nothing', () => {
    const config = aPolicy({
      protected_branches: undefined,
      integrations: {
        'chat-notifications-a': { webhook: WEBHOOK, channel: '#ops', notify_only_broken_pipelines: true },
      },
    });
    const [set] = decideProjectSettings(
      config,
      aSnapshot(aProjectSnapshot({ protectedBranches: undefined, integrations: {} })),
      NOW,
    );
    const { body, fingerprints } = integrationRequest(config, setIntegrationTarget(set.params));
    expect(body).toEqual({ webhook: WEBHOOK, channel: '#ops', notify_only_broken_pipelines: true });
    expect(Object.keys(fingerprints).sort()).toEqual([
      'chat-notifications-a.channel',
      'chat-notifications-a.notify_only_broken_pipelines',
      'chat-notifications-a.webhook',
    ]);
    expect(JSON.stringify(fingerprints)).not.toContain('s3cr3t');

    // The forge answers without the secret and without `channel` (not shown): the kept fingerprints stand in.
    const applied = aProjectSnapshot({
      protectedBranches: undefined,
      integrations: { 'chat-notifications-a': anIntegration({ notify_only_broken_pipelines: true }) },
      fingerprints,
    });
    expect(decideProjectSettings(config, aSnapshot(applied), NOW)).toEqual([]);
    // Another policy setting the same value keeps another fingerprint.
    expect(integrationRequest({ ...config, name: 'other' }, setIntegrationTarget(set.params)).fingerprints).not.toEqual(
      fingerprints,
    );
  });

  it('sends nothing when a secret the decision named is no longer declared', () => {
    const config = aPolicy({ protected_branches: undefined, integrations: { 'chatops-a': { token: 's3cr3t-token' } } });
    const [set] = decideProjectSettings(
      config,
      aSnapshot(aProjectSnapshot({ protectedBranches: undefined, integrations: {} })),
      NOW,
    );
    const changed = aPolicy({
      protected_branches: undefined,
      integrations: { 'external-wiki': { external_wiki_url: 'https://wiki.acme.com' } },
    });
    expect(() => integrationRequest(changed, setIntegrationTarget(set.params))).toThrow(
      'project_settings: chatops-a: secret token is no longer declared by policy baseline; the next pass decides again',
    );
  });
});

import { redactor } from '../logging/redact';
import { hookEnvironment } from './hook-runner';

describe('the environment of on_rotate', () => {
  const daemon = {
    PATH: '/usr/bin',
    HOME: '/home/forgewarden',
    LANG: 'C.UTF-8',
    SHELL_HISTORY_SECRET: 'not for hooks',
    DEPLOY_TARGET: 'prod',
    GITLAB_TOKEN: 'glpat-from-the-environment-123',
    REDIS_URL: 'redis://:hunter2@redis:6379',
    FORGE_CREDENTIAL: 'glpat-configured-through-another-name',
  };
  const key = { FORGEWARDEN_KEY_PATH: '/keys/root-1', FORGEWARDEN_KEY_ID: '51' };

  it("gives the hook PATH, HOME, LANG and the key's facts, nothing else of the daemon's environment", () => {
    expect(hookEnvironment(daemon, [], key)).toEqual({
      PATH: '/usr/bin',
      HOME: '/home/forgewarden',
      LANG: 'C.UTF-8',
      ...key,
    });
  });

  it('adds the variables the policy names, but never the daemon’s credentials', () => {
    redactor.addSecret('glpat-configured-through-another-name');
    const env = hookEnvironment(
      daemon,
      ['DEPLOY_TARGET', 'GITLAB_TOKEN', 'REDIS_URL', 'FORGE_CREDENTIAL', 'UNSET_VARIABLE'],
      key,
    );
    expect(env).toEqual({
      PATH: '/usr/bin',
      HOME: '/home/forgewarden',
      LANG: 'C.UTF-8',
      DEPLOY_TARGET: 'prod',
      ...key,
    });
  });
});

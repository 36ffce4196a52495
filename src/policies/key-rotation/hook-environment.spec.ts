import { redactor } from '../../logging/redact';
import { hookEnvironment } from './key-rotation.actions';

describe('the environment of on_rotate', () => {
  it("gives the hook the key's facts and the daemon's environment without its credentials", () => {
    redactor.addSecret('glpat-configured-through-another-name');
    const env = hookEnvironment(
      {
        PATH: '/usr/bin',
        HOME: '/home/forgewarden',
        GITLAB_TOKEN: 'glpat-from-the-environment-123',
        REDIS_URL: 'redis://:hunter2@redis:6379',
        FORGE_CREDENTIAL: 'glpat-configured-through-another-name',
      },
      { FORGEWARDEN_KEY_PATH: '/keys/root-1', FORGEWARDEN_KEY_ID: '51' },
    );
    expect(env).toEqual({ PATH: '/usr/bin', HOME: '/home/forgewarden', FORGEWARDEN_KEY_PATH: '/keys/root-1', FORGEWARDEN_KEY_ID: '51' });
  });
});

import { MemoryStream } from '../test/support/memory-stream';
import { protectSecrets } from './bootstrap';
import { parseConfig } from './config/load';
import { AppLogger } from './logging/logger';

/**
 * None of these looks like a forge token or stands in a URL or header, so nothing but protectSecrets telling the
 * process-wide redactor about them can mask them where they turn up alone.
 */
const FORGE_TOKEN = 'plain-forge-credential-31';
const REDIS_PASSWORD = 'plain-redis-password-32';
const WEBHOOK_SECRET = 'plain-webhook-secret-33';

describe('protectSecrets', () => {
  it('makes the logger mask the forge token, the Redis password and the webhook secret of the configuration', async () => {
    const config = parseConfig(
      [
        'version: 1',
        `gitlab: { url: https://gitlab.example.com, token: ${FORGE_TOKEN} }`,
        `redis: { url: "redis://:${REDIS_PASSWORD}@127.0.0.1:6379" }`,
        `webhooks: { enabled: true, secret_token: ${WEBHOOK_SECRET} }`,
      ].join('\n'),
      'policies.yml',
      { policyTypes: [], env: {} },
    );
    const stream = new MemoryStream();
    const logger = new AppLogger({ level: 'info', format: 'json', stream });
    protectSecrets(config);
    logger.log(`quoted alone: ${FORGE_TOKEN}, ${REDIS_PASSWORD}, ${WEBHOOK_SECRET}`, 'Spec');
    await logger.flush();
    expect(stream.text).toContain('quoted alone: [REDACTED], [REDACTED], [REDACTED]');
    for (const secret of [FORGE_TOKEN, REDIS_PASSWORD, WEBHOOK_SECRET]) expect(stream.text).not.toContain(secret);
  });
});

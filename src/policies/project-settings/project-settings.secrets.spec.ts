import { ApiError, ForbiddenError, NetworkError, NotFoundError, ValidationError } from '../../gitlab/transport/errors';
import { withoutSecrets } from './project-settings.secrets';

const SECRET = 'https://chat.example.com/hooks/T0/B0/s3cr3t-webhook';

describe('project_settings withoutSecrets', () => {
  it('hides the secret and keeps the class and status, so the executor still tells a refusal from a failure', () => {
    const refused = new ValidationError({
      status: 400,
      method: 'PUT',
      path: 'projects/1/services/chat-notifications-a',
      body: { message: { webhook: [`${SECRET} is not allowed`] } },
      message: `webhook: ${SECRET} is not allowed`,
    });
    const hidden = withoutSecrets(refused, [SECRET]);
    expect(hidden).toBeInstanceOf(ValidationError);
    expect(hidden).toMatchObject({
      status: 400,
      method: 'PUT',
      path: 'projects/1/services/chat-notifications-a',
      body: undefined,
      fields: { webhook: ['(secret) is not allowed'] },
    });
    expect((hidden as ApiError).summary).toBe(
      'PUT projects/1/services/chat-notifications-a → 400: webhook: (secret) is not allowed',
    );
    expect(JSON.stringify(hidden)).not.toContain('s3cr3t');
    expect(String((hidden as Error).stack)).not.toContain('s3cr3t');
    // The error itself is left as it was.
    expect(refused.message).toContain(SECRET);
  });

  it.each([
    [
      'a 403',
      new ForbiddenError({
        status: 403,
        method: 'PUT',
        path: 'projects/1/services/x',
        body: SECRET,
        message: `403 Forbidden ${encodeURIComponent(SECRET)}`,
      }),
    ],
    [
      'a 404',
      new NotFoundError({
        status: 404,
        method: 'PUT',
        path: 'projects/1/services/x',
        body: undefined,
        message: '404 Not found',
      }),
    ],
    [
      'no answer',
      new NetworkError({
        method: 'PUT',
        path: 'projects/1/services/x',
        message: `reset after ${SECRET}`,
        mayHaveReachedServer: true,
        code: 'ECONNRESET',
      }),
    ],
  ])('keeps %s what it is', (_title, error) => {
    const hidden = withoutSecrets(error, [SECRET]);
    expect(Object.getPrototypeOf(hidden)).toBe(Object.getPrototypeOf(error));
    expect((hidden as ApiError).status).toBe(error.status);
    expect(`${(hidden as ApiError).summary} ${JSON.stringify(hidden)}`).not.toContain('s3cr3t');
  });

  it('hides a secret the answer quotes JSON-escaped, as the message of a body of unknown shape does', () => {
    const password = 'pa"ss\\word-91';
    const body = { unexpected: { echo: password } };
    const error = new ApiError({
      status: 500,
      method: 'GET',
      path: 'projects/1/services/x',
      body,
      message: JSON.stringify(body),
    });
    expect((withoutSecrets(error, [password]) as ApiError).message).toBe('{"unexpected":{"echo":"(secret)"}}');
  });

  it('turns anything else into a plain Error without the secret', () => {
    const hidden = withoutSecrets(new TypeError(`bad ${SECRET}`), [SECRET]);
    expect(hidden).toEqual(new Error('bad (secret)'));
  });
});

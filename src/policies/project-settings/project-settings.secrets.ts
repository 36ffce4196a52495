import { ApiError, ValidationError } from '../../gitlab/transport/errors';
import { INTEGRATION_SLUGS, integrationParameters } from '../../gitlab/types/integrations';
import type { ProjectSettingsConfig } from './project-settings.schema';

/**
 * The integration secrets a project_settings file declares, and how they are kept out of what the policy reports: the
 * observer's reads, the preconditions and the actions all pass the forge's errors through `withoutSecrets`.
 */

/** Every secret value the policy declares, whatever the integration: any answer of the forge may echo one. */
export function declaredSecrets(config: ProjectSettingsConfig): string[] {
  const declared = (config.integrations ?? {}) as Readonly<
    Record<string, Readonly<Record<string, unknown>> | undefined>
  >;
  return INTEGRATION_SLUGS.flatMap((slug) => {
    const parameters = integrationParameters(slug);
    return Object.entries(declared[slug] ?? {}).flatMap(([name, value]) =>
      parameters[name]?.secret === true && typeof value === 'string' && value !== '' ? [value] : [],
    );
  });
}

/** Replaces each secret, as written, URL-encoded or JSON-escaped (the forms an answer may quote it in), by `(secret)`. */
export function hider(secrets: readonly string[]): (text: string) => string {
  const forms = secrets
    .flatMap((secret) => [secret, encodeURIComponent(secret), JSON.stringify(secret).slice(1, -1)])
    .filter((form) => form !== '');
  return (text) => forms.reduce((result, form) => result.split(form).join('(secret)'), text);
}

/**
 * The error without any secret: the executor logs and audits the error's message, and a forge may echo what it was
 * sent. A forge error keeps its class, status, method and path (a 403 or 400 is still a refusal the executor parks, a
 * 404 its `gone`), with the message, the per-field messages and the stack hidden and the answer's body and cause
 * dropped; anything else becomes a plain Error with its message hidden.
 */
export function withoutSecrets(error: unknown, secrets: readonly string[]): unknown {
  const hide = hider(secrets);
  if (!(error instanceof ApiError)) return new Error(hide(error instanceof Error ? error.message : String(error)));
  const copy = Object.create(Object.getPrototypeOf(error) as object) as ApiError;
  // The own fields (status, method, path, headers, name, and a subclass's own such as retryAfterMs).
  Object.assign(copy, error);
  const replace = (name: string, value: unknown) =>
    Object.defineProperty(copy, name, {
      value,
      writable: true,
      configurable: true,
      enumerable: name !== 'message' && name !== 'stack',
    });
  replace('message', hide(error.message));
  replace('stack', error.stack === undefined ? undefined : hide(error.stack));
  replace('body', undefined);
  replace('path', hide(error.path));
  if (error instanceof ValidationError) {
    replace(
      'fields',
      Object.fromEntries(Object.entries(error.fields).map(([field, messages]) => [field, messages.map(hide)])),
    );
  }
  return copy;
}

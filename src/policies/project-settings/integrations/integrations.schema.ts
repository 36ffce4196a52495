import { z } from 'zod';
import {
  INTEGRATION_PARAMETERS,
  INTEGRATION_SLUGS,
  type IntegrationParameter,
  type IntegrationParamsBySlug,
  type IntegrationSlug,
} from '../../../gitlab/types/integrations';
import { got } from '../project-settings.fields';

/** `integrations:` of a project_settings policy, built from the client's table of each service's parameters. */

/** `, got …` for an integration parameter: a secret is never shown, however wrong it is. */
function gotParameter(parameter: IntegrationParameter, input: unknown): string {
  return parameter.secret ? ', got something else (a secret: not shown)' : got(input);
}

function isHttpUrl(text: string): boolean {
  try {
    const parsed = new URL(text);
    return parsed.protocol === 'http:' || parsed.protocol === 'https:';
  } catch {
    return false;
  }
}

/** One integration parameter, by its entry in the client's table; a required one left out is named with its slug. */
function integrationParameter(
  slug: IntegrationSlug,
  name: string,
  parameter: IntegrationParameter,
): z.ZodType<string | number | boolean | undefined> {
  const expected = (what: string) => (issue: { input: unknown }) =>
    issue.input === undefined
      ? `${slug} requires ${name} (${what})`
      : `expected ${what}${gotParameter(parameter, issue.input)}`;
  let schema: z.ZodType<string | number | boolean>;
  switch (parameter.kind) {
    case 'boolean':
      schema = z.boolean({ error: expected('true or false') });
      break;
    case 'integer':
      schema = z
        .number({ error: expected('a whole number') })
        .int({ error: (issue) => `expected a whole number${gotParameter(parameter, issue.input)}` });
      break;
    case 'enum': {
      const values = parameter.values ?? [];
      schema = z.enum(values as [string, ...string[]], { error: expected(`one of ${values.join(', ')}`) });
      break;
    }
    case 'url':
      schema = z
        .string({ error: expected('an http(s) URL') })
        .refine(isHttpUrl, { error: (issue) => `expected an http(s) URL${gotParameter(parameter, issue.input)}` });
      break;
    case 'string':
      schema = z
        .string({
          error: expected(parameter.secret ? 'a string, best written as "${VARIABLE}"' : 'a string (quote numbers)'),
        })
        // The forge takes an empty required parameter as missing.
        .refine((text) => !parameter.required || text.trim() !== '', {
          error: `${slug} requires ${name}: it must not be empty`,
        });
      break;
  }
  const description = parameter.secret
    ? 'A secret: write it as "${VARIABLE}"; it is never printed.'
    : parameter.kind === 'enum'
      ? `One of ${(parameter.values ?? []).join(', ')}.`
      : undefined;
  const described = description === undefined ? schema : schema.describe(description);
  return parameter.required ? described : described.optional();
}

/** The declared integrations, typed by slug as the client's `edit` takes them. */
export type DeclaredIntegrations = { readonly [S in IntegrationSlug]?: IntegrationParamsBySlug[S] };

export const integrationsSchema = z
  .strictObject(
    Object.fromEntries(
      INTEGRATION_SLUGS.map((slug) => {
        const parameters: Readonly<Record<string, IntegrationParameter>> = INTEGRATION_PARAMETERS[slug];
        const shape = Object.fromEntries(
          Object.entries(parameters).map(([name, parameter]) => [name, integrationParameter(slug, name, parameter)]),
        );
        return [slug, z.strictObject(shape, { error: `expected the parameters of ${slug} as a mapping` }).optional()];
      }),
    ),
    {
      error:
        'expected a mapping of integration slugs to their parameters, such as { chat-notifications-a: { webhook: "${CHAT_WEBHOOK_URL}" } }',
    },
  )
  .refine((integrations) => Object.values(integrations).some((value) => value !== undefined), {
    error: 'give at least one integration, or leave the key out',
    // Not also when the only slug is unknown: that one problem says it.
    when: (payload) => payload.issues.length === 0,
  })
  // Each slug's schema is built from INTEGRATION_PARAMETERS, the table IntegrationParamsBySlug is read from.
  .transform((integrations) => integrations as DeclaredIntegrations)
  .describe(
    'Integrations by slug (docs/api-client.md, Integration slugs), each with its parameters; secrets come from the environment ("${VARIABLE}") and are never printed.',
  )
  .optional();

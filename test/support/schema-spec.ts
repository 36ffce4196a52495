import { parseConfig } from '../../src/config/load';
import type { PolicyTypeDefinition } from '../../src/config/policy-type';
import { ConfigError, formatProblem } from '../../src/config/problems';
import type { AppConfig } from '../../src/config/schema';

/** What `validate` says of a field that is no duration. */
export const DURATION_PROBLEM = 'expected a duration such as 30s, 5m, 2h, 14d, 2w or 1month';

const HEADER = [
  'version: 1',
  'gitlab: { url: "https://gitlab.example.com", token: "glpat-test-0000000000" }',
  'policies:',
];

export interface PolicyFiles {
  /** A policy file with one policy of the type, named as given, whose body is `lines` (indented under the list item). */
  file(...lines: string[]): string;
  /** `text` loaded as the daemon loads a policy file, knowing only this policy type. */
  parse(text: string): AppConfig;
  /** The problems `validate` would print for `text`; throws when the file is valid. */
  problemsOf(text: string): string[];
}

/** Policy files of one policy type, for its schema spec. */
export function policyFiles(policyType: PolicyTypeDefinition, name: string): PolicyFiles {
  const parse = (text: string): AppConfig => parseConfig(text, 'policies.yml', { policyTypes: [policyType], env: {} });
  return {
    file: (...lines) =>
      [...HEADER, `  - name: ${name}`, `    type: ${policyType.type}`, ...lines.map((line) => `    ${line}`)].join(
        '\n',
      ),
    parse,
    problemsOf(text) {
      try {
        parse(text);
      } catch (error) {
        if (error instanceof ConfigError) return error.problems.map(formatProblem);
        throw error;
      }
      throw new Error('expected the file to be invalid');
    },
  };
}

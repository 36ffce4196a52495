import { basename, dirname, join, resolve } from 'node:path';
import { z } from 'zod';
import { readSourceFile } from '../config/load';
import { ConfigError, type ConfigProblem, quote } from '../config/problems';
import type { PolicyConfig } from '../config/policy-type';
import { re2 } from '../config/validators';
import { YamlSource } from '../config/yaml-source';
import { loadWorld, type ParsedWorld, WorldError, worldSchema } from '../sandbox/world';

/**
 * The test file of a policy file (`policies.test.yml` beside `policies.yml`): each test names a policy, a world (a
 * sandbox world file, or one written inline), the time it runs at, and the decisions it expects. docs/testing-policies.md
 * describes it; `forgewarden schema --tests` prints its JSON Schema.
 */

/** The outcomes a dry pass records: an action that would be taken, a skip, one over `max_actions_per_run`. */
export const TEST_OUTCOMES = ['would_act', 'skipped', 'deferred'] as const;
export type TestOutcome = (typeof TEST_OUTCOMES)[number];

const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})$/;

const time = z
  .string({ error: 'expected an ISO 8601 time with its zone, such as 2025-06-02T12:00:00Z' })
  .refine((text) => ISO_TIME.test(text) && !Number.isNaN(Date.parse(text)), {
    error: 'expected an ISO 8601 time with its zone, such as 2025-06-02T12:00:00Z',
  })
  .transform((text) => new Date(text).toISOString());

const expectedDecision = z
  .strictObject({
    action: z.string().min(1).describe('The action decided (retry, delete_tags, approve, …) or skip.'),
    target: z.string().min(1).describe('What the decision is about, as `plan` prints it (job 812 of acme/api …).'),
    outcome: z
      .enum(TEST_OUTCOMES)
      .optional()
      .describe('What a dry pass records: would_act, skipped, or deferred (over max_actions_per_run).'),
    reason: z.string().optional().describe('The reason, exactly as `plan` prints it.'),
    reason_matches: re2()
      .optional()
      .describe('An RE2 expression the reason must match somewhere (instead of `reason`).'),
  })
  .refine((decision) => decision.reason === undefined || decision.reason_matches === undefined, {
    error: 'give reason or reason_matches, not both',
    path: ['reason_matches'],
  });
export type ExpectedDecision = z.output<typeof expectedDecision>;

/** The shape of a test; `world` is a path or a world, which the world's own schema checks (see worldSchema). */
function testSchema<World extends z.ZodType>(world: World) {
  return z.strictObject({
    name: z.string().min(1).describe('What the test shows, one line.'),
    policy: z.string().min(1).describe('The name of the policy of the policy file under test.'),
    world: world.describe('A sandbox world file (relative to this file), or a world written here in the same format.'),
    now: time
      .optional()
      .describe(
        'When the pass runs: the clock of its schedules, ages, expiries and grace periods. Default: the world’s `now`.',
      ),
    occasion: z
      .enum(['command', 'schedule'])
      .default('command')
      .describe(
        'What starts the pass: a person’s command, as `plan` (the default), or its schedule (group_backup keeps to its schedule then).',
      ),
    as: z
      .string()
      .min(1)
      .optional()
      .describe(
        'The user the policy’s token belongs to. Default: the world’s first administrator, else its first user.',
      ),
    expect: z
      .strictObject({
        decisions: z
          .array(expectedDecision)
          .default([])
          .describe('Decisions the pass must make, each matched by action and target.'),
        no_other_actions: z
          .boolean()
          .default(false)
          .describe('Fail when the pass decides any other action (skips aside).'),
        not_read: z
          .array(z.string().min(1))
          .default([])
          .describe(
            'Targets the pass may not read (project acme/gone), as `plan` names them; any other unread target fails the test.',
          ),
      })
      .describe('What the pass must decide.'),
  });
}

function fileSchema<World extends z.ZodType>(world: World) {
  return z.strictObject({
    version: z.literal(1, { error: 'expected version: 1 (the only version of the test file so far)' }),
    policy_file: z
      .string()
      .min(1)
      .optional()
      .describe('The policy file under test, relative to this file. Default: this file’s name without `.test`.'),
    env: z
      .record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { error: 'expected a variable name' }), z.string())
      .default({})
      .describe(
        'Values of the ${VAR}s of the policy file; any other variable without a default stands in as text (never the environment).',
      ),
    tests: z.array(testSchema(world)).min(1, { error: 'give at least one test' }),
  });
}

const worldAsWritten = z.union([z.string().min(1), z.record(z.string(), z.unknown())], {
  error: 'expected the path of a world file, or a world (a mapping)',
});
const testFileSchema = fileSchema(worldAsWritten);
/** The same with the world's own schema, for the hints of an inline world's problems ("did you mean"). */
const inlineWorldHints = fileSchema(worldSchema);

/** The JSON Schema of the test file, for editors. */
export function testFileJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(fileSchema(z.union([z.string().min(1), worldSchema])), {
    io: 'input',
    unrepresentable: 'any',
  });
  return { ...schema, title: 'Forgewarden policy test file' };
}

/** One test, ready to run. */
export interface PolicyTest {
  readonly name: string;
  /** `FILE:LINE` of the test, for reports. */
  readonly at: string;
  readonly line: number;
  readonly policy: string;
  readonly world: ParsedWorld;
  /** The world file, or `inline` for one written in the test. */
  readonly worldFile: string;
  readonly now: string;
  readonly occasion: 'command' | 'schedule';
  /** The username of the policy's token. */
  readonly as: string;
  readonly expect: {
    readonly decisions: readonly ExpectedDecision[];
    readonly noOtherActions: boolean;
    readonly notRead: readonly string[];
  };
}

export interface TestFile {
  readonly file: string;
  readonly policyFile: string;
  /** The policies of the policy file, read with the test file's `env`. */
  readonly policies: readonly PolicyConfig[];
  readonly tests: readonly PolicyTest[];
}

/** The policy file a test file tests when it does not say: `policies.test.yml` → `policies.yml`. */
export function defaultPolicyFile(testFile: string): string {
  return join(dirname(testFile), basename(testFile).replace(/\.test(\.ya?ml)$/i, '$1'));
}

/** The test file beside a policy file: `policies.yml` → `policies.test.yml`. */
export function testFileOf(policyFile: string): string {
  const name = basename(policyFile);
  const dot = name.lastIndexOf('.');
  return join(dirname(policyFile), dot > 0 ? `${name.slice(0, dot)}.test${name.slice(dot)}` : `${name}.test.yml`);
}

/**
 * Reads and checks a test file and the worlds it names. Every problem at once, as `FILE:LINE:COL key.path: message`
 * (a world file's own at its lines), in a ConfigError. `loadPolicies` reads the policy file with the test's `env`
 * (and throws a ConfigError at the policy file's lines).
 */
export function loadTestFile(
  file: string,
  loadPolicies: (policyFile: string, env: Readonly<Record<string, string>>) => readonly PolicyConfig[],
): TestFile {
  const source = YamlSource.parse(readSourceFile(file, 'test file', 1024 * 1024), file);
  const data = source.toData(1000) ?? {};
  const parsed = testFileSchema.safeParse(data);
  if (!parsed.success) throw new ConfigError(source.schemaProblems(parsed.error.issues, testFileSchema, data));
  const policyFile =
    parsed.data.policy_file !== undefined ? resolve(dirname(file), parsed.data.policy_file) : defaultPolicyFile(file);
  const policies = loadPolicies(policyFile, parsed.data.env);
  const names = policies.map((policy) => policy.name);
  const problems: ConfigProblem[] = [];
  const tests: PolicyTest[] = [];
  parsed.data.tests.forEach((test, index) => {
    const at = (key: PropertyKey[], message: string) =>
      problems.push(source.problemAt(['tests', index, ...key], message));
    if (!names.includes(test.policy))
      at(
        ['policy'],
        `${policyFile} has no policy ${quote(test.policy)}; it has ${names.map((name) => quote(name)).join(', ') || 'none'}`,
      );
    const world = readWorld(source, file, index, test.world, problems);
    if (!world) return;
    const now = test.now ?? world.now;
    if (now === undefined) {
      at(
        ['now'],
        'missing: when the pass runs (an ISO 8601 time); the world has no `now` either, and a test must decide the same on every day',
      );
      return;
    }
    const as = test.as ?? (world.users.find((user) => user.admin) ?? world.users[0])?.username;
    if (as === undefined) {
      at(['world'], "the world has no users, and the policy's token must belong to one");
      return;
    }
    if (!world.users.some((user) => user.username.toLowerCase() === as.toLowerCase()))
      at(['as'], `the world has no user ${quote(as)}`);
    tests.push({
      name: test.name,
      at: `${file}:${source.problemAt(['tests', index], '').line}`,
      line: source.problemAt(['tests', index], '').line,
      policy: test.policy,
      world,
      worldFile: typeof test.world === 'string' ? resolve(dirname(file), test.world) : 'inline',
      now: new Date(now).toISOString(),
      occasion: test.occasion,
      as,
      expect: {
        decisions: test.expect.decisions,
        noOtherActions: test.expect.no_other_actions,
        notRead: test.expect.not_read,
      },
    });
  });
  if (problems.length > 0)
    throw new ConfigError(
      problems.sort((a, b) => (a.file === b.file ? a.line - b.line || a.col - b.col : a.file < b.file ? -1 : 1)),
    );
  return { file, policyFile, policies, tests };
}

/** A test's world: its file, read and checked (problems at the world file's lines), or the world written inline. */
function readWorld(
  source: YamlSource,
  file: string,
  index: number,
  world: string | Record<string, unknown>,
  problems: ConfigProblem[],
): ParsedWorld | undefined {
  if (typeof world === 'string') {
    try {
      return loadWorld(resolve(dirname(file), world));
    } catch (error) {
      if (!(error instanceof WorldError)) throw error;
      for (const problem of error.problems) {
        problems.push({
          file: problem.file,
          line: problem.line ?? 1,
          col: problem.col ?? 1,
          path: problem.path,
          message: problem.message,
        });
      }
      return undefined;
    }
  }
  const result = worldSchema.safeParse(world);
  if (result.success) return result.data;
  const at = ['tests', index, 'world'];
  problems.push(
    ...source.schemaProblems(
      result.error.issues.map((issue) => ({ ...issue, path: [...at, ...issue.path] })),
      inlineWorldHints,
      source.toData(1000),
    ),
  );
  return undefined;
}

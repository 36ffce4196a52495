import { readFileSync } from 'node:fs';
import { interpolateEnvironment } from './interpolate';
import type { PolicyTypeDefinition } from './policy-type';
import { ConfigError, type ConfigProblem } from './problems';
import { buildConfigSchema, type AppConfig } from './schema';
import { YamlSource } from './yaml-source';

export interface LoadOptions {
  readonly policyTypes: readonly PolicyTypeDefinition[];
  readonly env?: NodeJS.ProcessEnv;
}

/** Reads, interpolates and validates a policy file; throws a ConfigError listing every problem at once. */
export function loadConfigFile(file: string, options: LoadOptions): AppConfig {
  return parseConfig(readSourceFile(file, 'policy file'), file, options);
}

/** The text of a file, or a ConfigError that says why it cannot be read. */
export function readSourceFile(file: string, what: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (error as Error).message;
    throw new ConfigError([{ file, line: 1, col: 1, path: '(file)', message: `cannot read the ${what}: ${reason}` }]);
  }
}

export function parseConfig(text: string, file: string, options: LoadOptions): AppConfig {
  const env = options.env ?? process.env;
  const source = YamlSource.parse(text, file);
  const problems: ConfigProblem[] = interpolateEnvironment(source.doc, env).map(({ node, message }) =>
    source.problemAt(source.pathOf(node), message),
  );

  const data: unknown = source.doc.toJS({ maxAliasCount: 1000 });
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    throw new ConfigError([...problems, source.problemAt([], 'expected a mapping with version, gitlab and policies')]);
  }
  applyEnvironmentDefaults(data as Record<string, unknown>, env);

  problems.push(...duplicateNames(source, data as Record<string, unknown>));

  const schema = buildConfigSchema(options.policyTypes);
  const result = schema.safeParse(data);
  if (result.success && problems.length === 0) return result.data as AppConfig;

  // A variable that is not set also makes its value invalid; the first problem says what to fix.
  const alreadyReported = new Set(problems.map((p) => `${p.line}:${p.col}`));
  const schemaProblems = source
    .schemaProblems(result.error?.issues ?? [], schema, data)
    .filter((problem) => !alreadyReported.has(`${problem.line}:${problem.col}`));
  throw new ConfigError([...problems, ...schemaProblems].sort((a, b) => a.line - b.line || a.col - b.col));
}

/** Each policy name used a second time, reported at that second use. */
function duplicateNames(source: YamlSource, data: Record<string, unknown>): ConfigProblem[] {
  const policies = data.policies;
  if (!Array.isArray(policies)) return [];
  const firstUse = new Map<string, number>();
  const problems: ConfigProblem[] = [];
  policies.forEach((policy: unknown, index) => {
    const name = typeof policy === 'object' && policy !== null ? (policy as Record<string, unknown>).name : undefined;
    if (typeof name !== 'string') return;
    const first = firstUse.get(name);
    if (first === undefined) firstUse.set(name, index);
    else problems.push(source.problemAt(['policies', index, 'name'], `duplicate policy name "${name}" (policies[${first}] has it already)`));
  });
  return problems;
}

/** GITLAB_URL, GITLAB_TOKEN and REDIS_URL stand in for keys the file leaves out. */
function applyEnvironmentDefaults(data: Record<string, unknown>, env: NodeJS.ProcessEnv): void {
  const fill = (section: string, key: string, variable: string) => {
    const value = env[variable];
    if (!value) return;
    const current = data[section] ?? {};
    if (typeof current !== 'object' || current === null || Array.isArray(current)) return;
    const record = current as Record<string, unknown>;
    if (record[key] === undefined) data[section] = { ...record, [key]: value };
  };
  fill('gitlab', 'url', 'GITLAB_URL');
  fill('gitlab', 'token', 'GITLAB_TOKEN');
  fill('redis', 'url', 'REDIS_URL');
}

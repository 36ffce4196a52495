import { readFileSync } from 'node:fs';
import { isAlias, isMap, isScalar, isSeq, LineCounter, parseDocument, type Document, type Node, type YAMLError } from 'yaml';
import type { z } from 'zod';
import { interpolateEnvironment } from './interpolate';
import type { PolicyTypeDefinition } from './policy-type';
import { closestKey, ConfigError, formatPath, type ConfigProblem } from './problems';
import { buildConfigSchema, type AppConfig } from './schema';
import { knownKeysAt } from './schema-walk';

export interface LoadOptions {
  readonly policyTypes: readonly PolicyTypeDefinition[];
  readonly env?: NodeJS.ProcessEnv;
}

/** Reads, interpolates and validates a policy file; throws a ConfigError listing every problem at once. */
export function loadConfigFile(file: string, options: LoadOptions): AppConfig {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (error as Error).message;
    throw new ConfigError([{ file, line: 1, col: 1, path: '(file)', message: `cannot read the policy file: ${reason}` }]);
  }
  return parseConfig(text, file, options);
}

export function parseConfig(text: string, file: string, options: LoadOptions): AppConfig {
  const env = options.env ?? process.env;
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, uniqueKeys: true, prettyErrors: true });
  const at = (offset: number | undefined) => {
    const { line, col } = lineCounter.linePos(offset ?? 0);
    return { file, line, col };
  };

  if (doc.errors.length > 0) {
    throw new ConfigError(
      doc.errors.map((error) => ({ ...at(syntaxErrorOffset(text, error)), path: '(syntax)', message: firstLine(error.message) })),
    );
  }

  const problems: ConfigProblem[] = interpolateEnvironment(doc, env).map(({ node, message }) => ({
    ...at(node.range?.[0]),
    path: formatPath(pathOfNode(doc, node)),
    message,
  }));

  const data: unknown = doc.toJS({ maxAliasCount: 1000 });
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    throw new ConfigError([
      ...problems,
      { ...at(doc.contents?.range?.[0]), path: '(root)', message: 'expected a mapping with version, gitlab and policies' },
    ]);
  }
  applyEnvironmentDefaults(data as Record<string, unknown>, env);

  const schema = buildConfigSchema(options.policyTypes);
  const result = schema.safeParse(data);
  if (result.success && problems.length === 0) return result.data as AppConfig;

  const alreadyReported = new Set(problems.map((p) => `${p.line}:${p.col}`));
  for (const issue of result.error?.issues ?? []) {
    for (const problem of describeIssue(issue, data, schema, doc, at)) {
      if (!alreadyReported.has(`${problem.line}:${problem.col}`)) problems.push(problem);
    }
  }
  problems.sort((a, b) => a.line - b.line || a.col - b.col);
  throw new ConfigError(problems);
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

type Locate = (offset: number | undefined) => { file: string; line: number; col: number };

function describeIssue(
  issue: z.core.$ZodIssue,
  data: unknown,
  schema: z.ZodType,
  doc: Document,
  at: Locate,
): ConfigProblem[] {
  if (issue.code === 'unrecognized_keys') {
    const known = knownKeysAt(schema, data, issue.path);
    return issue.keys.map((key) => {
      const path = [...issue.path, key];
      const suggestion = closestKey(key, known);
      const hint = suggestion ? `; did you mean "${suggestion}"?` : known.length ? `; known keys: ${known.join(', ')}` : '';
      return { ...at(locate(doc, path, 'key')), path: formatPath(path), message: `unknown key "${key}"${hint}` };
    });
  }
  const missing = valueAt(data, issue.path) === undefined;
  const custom = !issue.message.startsWith('Invalid input');
  const message = missing ? (custom ? `missing: ${issue.message}` : 'missing: this key is required') : issue.message;
  return [{ ...at(locate(doc, issue.path, 'value')), path: formatPath(issue.path), message }];
}

function valueAt(data: unknown, path: ReadonlyArray<PropertyKey>): unknown {
  let value = data;
  for (const segment of path) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = (value as Record<PropertyKey, unknown>)[segment];
  }
  return value;
}

/**
 * The source offset for `path`: the value there, or its key when asked, or, for a key that is missing, the key of
 * the nearest mapping that holds it (so "gitlab.url: missing" points at `gitlab:`).
 */
function locate(doc: Document, path: ReadonlyArray<PropertyKey>, want: 'key' | 'value'): number | undefined {
  let node: unknown = doc.contents;
  let keyNode: Node | undefined;
  for (const segment of path) {
    if (isAlias(node)) node = node.resolve(doc);
    if (isMap(node)) {
      const pair = node.items.find((item) => isScalar(item.key) && String(item.key.value) === String(segment));
      if (!pair) return keyNode?.range?.[0] ?? (node.range?.[0]);
      keyNode = pair.key as Node;
      node = pair.value;
    } else if (isSeq(node) && typeof segment === 'number' && node.items[segment]) {
      node = node.items[segment];
      keyNode = node as Node;
    } else {
      return keyNode?.range?.[0] ?? (node as Node | null)?.range?.[0];
    }
  }
  if (want === 'key' && keyNode) return keyNode.range?.[0];
  return (node as Node | null)?.range?.[0] ?? keyNode?.range?.[0];
}

/** The key path of a scalar node, for problems found before validation (interpolation). */
function pathOfNode(doc: Document, target: Node): PropertyKey[] {
  const walk = (node: unknown, path: PropertyKey[]): PropertyKey[] | undefined => {
    if (node === target) return path;
    if (isMap(node)) {
      for (const pair of node.items) {
        const key = isScalar(pair.key) ? String(pair.key.value) : '?';
        const found = walk(pair.value, [...path, key]);
        if (found) return found;
      }
    } else if (isSeq(node)) {
      for (let index = 0; index < node.items.length; index++) {
        const found = walk(node.items[index], [...path, index]);
        if (found) return found;
      }
    }
    return undefined;
  };
  return walk(doc.contents, []) ?? [];
}

/**
 * Where a syntax error starts. The parser notices an unclosed quote only where the input ends; the operator needs
 * the line where the quote was opened.
 */
function syntaxErrorOffset(text: string, error: YAMLError): number {
  const quote = /^Missing closing (["'])quote/.exec(error.message)?.[1];
  if (error.code === 'MISSING_CHAR' && quote) {
    const opening = text.lastIndexOf(quote, error.pos[0] - 1);
    if (opening >= 0) return opening;
  }
  return error.pos[0];
}

function firstLine(message: string): string {
  return message.split('\n')[0].replace(/ at line \d+, column \d+:?$/, '');
}

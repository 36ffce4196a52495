import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import { interpolateEnvironment } from './interpolate';
import type { PolicyConfig, PolicyTypeDefinition } from './policy-type';
import { ConfigError, formatPath, quote, type ConfigProblem } from './problems';
import { buildConfigSchema, policiesSchema, type AppConfig } from './schema';
import { YamlSource } from './yaml-source';

export interface LoadOptions {
  readonly policyTypes: readonly PolicyTypeDefinition[];
  readonly env?: NodeJS.ProcessEnv;
  /**
   * `validate --no-env`: the environment is not read. Every `${VAR}` is taken as set, and so are GITLAB_URL and
   * GITLAB_TOKEN for the keys the file leaves out; the checks of those values are skipped, every other check is made.
   */
  readonly assumeEnvironment?: boolean;
}

/** A file checked without the environment: its configuration when every value was known, and its policy count. */
export interface CheckedConfig {
  readonly config?: AppConfig;
  readonly policies: number;
}

/**
 * The largest policy file read. A real one is a few kilobytes; without a bound, a mistaken path (a log file, a disk
 * image, /dev/zero) would be read whole before anything could be said about it.
 */
export const MAX_POLICY_FILE_BYTES = 1024 * 1024;

/** Reads, interpolates and validates a policy file; throws a ConfigError listing every problem at once. */
export function loadConfigFile(file: string, options: LoadOptions): AppConfig {
  return parseConfig(readSourceFile(file, 'policy file', MAX_POLICY_FILE_BYTES), file, options);
}

/**
 * The text of a file, or a ConfigError that says why it cannot be read: missing, larger than `maxBytes`, or not
 * UTF-8 (decoding would otherwise turn a stray Latin-1 byte into U+FFFD inside a value, silently). A byte order mark
 * is dropped, so columns on the first line count from the first character the operator sees.
 */
export function readSourceFile(file: string, what: string, maxBytes = Infinity): string {
  let bytes: Buffer;
  try {
    bytes = readAtMost(file, maxBytes);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const reason =
      code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory' : (error as Error).message;
    throw new ConfigError([{ file, line: 1, col: 1, path: '(file)', message: `cannot read the ${what}: ${reason}` }]);
  }
  if (bytes.length > maxBytes) {
    throw new ConfigError([
      {
        file,
        line: 1,
        col: 1,
        path: '(file)',
        message: `the ${what} is larger than ${formatBytes(maxBytes)}; is this the right file?`,
      },
    ]);
  }
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    const offset = firstInvalidUtf8(bytes);
    const before = new TextDecoder('utf-8').decode(bytes.subarray(0, offset));
    const line = before.split('\n').length;
    const col = before.length - before.lastIndexOf('\n');
    const byte = `0x${bytes[offset].toString(16).toUpperCase().padStart(2, '0')}`;
    throw new ConfigError([
      { file, line, col, path: '(file)', message: `byte ${byte} is not UTF-8; save the ${what} as UTF-8` },
    ]);
  }
}

/** Up to `maxBytes + 1` bytes, so a larger file (or an endless device) is known to be too large without reading it all. */
function readAtMost(file: string, maxBytes: number): Buffer {
  if (maxBytes === Infinity) return readFileSync(file);
  const fd = openSync(file, 'r');
  try {
    const buffer = Buffer.alloc(maxBytes + 1);
    let length = 0;
    for (;;) {
      const read = readSync(fd, buffer, length, buffer.length - length, null);
      if (read === 0) break;
      length += read;
      if (length === buffer.length) break;
    }
    return buffer.subarray(0, length);
  } finally {
    closeSync(fd);
  }
}

/** The offset of the first byte of the first sequence that is not UTF-8 in `bytes`, which does not decode. */
function firstInvalidUtf8(bytes: Buffer): number {
  // The longest prefix that decodes when streaming (an incomplete sequence at its end is then no error yet).
  let good = 0;
  let bad = bytes.length;
  while (bad - good > 1) {
    const middle = Math.floor((good + bad) / 2);
    try {
      new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(0, middle), { stream: true });
      good = middle;
    } catch {
      bad = middle;
    }
  }
  // Either the byte after that prefix is wrong, or the prefix ends in a sequence that the next byte does not continue:
  // then the operator needs the sequence's first byte (0xE9 of "café" in Latin-1), not the innocent byte after it.
  let start = good;
  while (start > 0 && good - start < 3 && (bytes[start - 1] & 0xc0) === 0x80) start--;
  return start > 0 && bytes[start - 1] >= 0xc0 ? start - 1 : good;
}

function formatBytes(bytes: number): string {
  return bytes % (1024 * 1024) === 0 ? `${bytes / (1024 * 1024)} MiB` : `${bytes} bytes`;
}

/**
 * The source each loaded configuration was read from, so that checks made after loading (warnings) still point at
 * the line the operator wrote. Weak: a configuration that is dropped takes its source with it.
 */
const sources = new WeakMap<AppConfig, YamlSource>();

export function parseConfig(text: string, file: string, options: LoadOptions): AppConfig {
  // Parsed here, not a call deeper: how deep a file may nest before the parser says so depends on the stack left.
  const { config } = checkSource(YamlSource.parse(text, file), { ...options, assumeEnvironment: false });
  // Every value is known when the environment is read: a file without problems has a configuration.
  if (!config) throw new Error(`${file}: checked without a configuration`);
  return config;
}

/** Like loadConfigFile, and with `assumeEnvironment` the file is checked without reading the environment. */
export function checkConfigFile(file: string, options: LoadOptions): CheckedConfig {
  return checkSource(YamlSource.parse(readSourceFile(file, 'policy file', MAX_POLICY_FILE_BYTES), file), options);
}

/**
 * The policies of a file for `forgewarden test`, which runs without the environment: the file must be valid as
 * `validate --no-env` finds it (a ConfigError otherwise); then each `${VAR}` takes its value from `env` (the test's),
 * its default, or `standIn(VAR)`, and the policies are read with those values. A policy a stand-in makes invalid (a
 * duration from `${INTERVAL}`) is a ConfigError at its line that says so.
 */
export function loadPoliciesWithStandIns(
  file: string,
  options: {
    readonly policyTypes: readonly PolicyTypeDefinition[];
    readonly env: NodeJS.ProcessEnv;
    readonly standIn: (name: string) => string;
  },
): PolicyConfig[] {
  checkConfigFile(file, { policyTypes: options.policyTypes, assumeEnvironment: true });
  const source = YamlSource.parse(readSourceFile(file, 'policy file', MAX_POLICY_FILE_BYTES), file);
  const { unknown } = interpolateEnvironment(source.doc, options.env, { standIn: options.standIn });
  const data = source.toData(1000) as Record<string, unknown>;
  const result = policiesSchema(options.policyTypes).safeParse(data.policies ?? []);
  if (result.success) return result.data as PolicyConfig[];
  const stoodIn = new Set(unknown.map((node) => formatPath(source.pathOf(node))));
  const issues = result.error.issues.map((issue) => ({ ...issue, path: ['policies', ...issue.path] }));
  throw new ConfigError(
    source.schemaProblems(issues, buildConfigSchema(options.policyTypes), data).map((problem) =>
      stoodIn.has(problem.path)
        ? {
            ...problem,
            message: `${problem.message} (a variable the test does not set stands in here: give it a value under env: in the test file)`,
          }
        : problem,
    ),
  );
}

export function checkConfig(text: string, file: string, options: LoadOptions): CheckedConfig {
  return checkSource(YamlSource.parse(text, file), options);
}

function checkSource(source: YamlSource, options: LoadOptions): CheckedConfig {
  const env = options.assumeEnvironment ? {} : (options.env ?? process.env);
  const interpolated = interpolateEnvironment(source.doc, env, { assumeSet: options.assumeEnvironment });
  const problems: ConfigProblem[] = interpolated.problems.map(({ node, message }) =>
    source.problemAt(source.pathOf(node), message),
  );
  /** The key paths whose values come from the environment and are not known here. */
  const unknown = new Set(interpolated.unknown.map((node) => formatPath(source.pathOf(node))));

  const data: unknown = source.toData(1000);
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    throw new ConfigError([...problems, source.problemAt([], 'expected a mapping with version, gitlab and policies')]);
  }
  if (options.assumeEnvironment) {
    for (const path of assumeForgeVariables(data as Record<string, unknown>)) unknown.add(path);
  } else {
    problems.push(...emptyForgeVariables(source, data as Record<string, unknown>, env));
    applyEnvironmentDefaults(data as Record<string, unknown>, env);
  }

  // A name whose variable is unknown or missing is no name yet: two such are not the same name.
  const unresolvedNames = new Set([
    ...unknown,
    ...interpolated.problems.map(({ node }) => formatPath(source.pathOf(node))),
  ]);
  problems.push(...duplicateNames(source, data as Record<string, unknown>, unresolvedNames));

  const schema = buildConfigSchema(options.policyTypes);
  const result = schema.safeParse(data);
  // An issue about a value nobody knows yet (a duration from ${INTERVAL}) is no issue of the file.
  const isKnown = (path: readonly PropertyKey[]) =>
    !path.some((_, index) => unknown.has(formatPath(path.slice(0, index + 1))));
  const issues = (result.error?.issues ?? []).filter((issue) => isKnown(issue.path));
  if (issues.length === 0 && problems.length === 0) {
    const policies = Array.isArray((data as Record<string, unknown>).policies)
      ? ((data as Record<string, unknown>).policies as unknown[]).length
      : 0;
    if (!result.success) return { policies };
    const config = result.data as AppConfig;
    sources.set(config, source);
    return { config, policies: config.policies.length };
  }

  // A variable that is not set also makes its value invalid; the first problem says what to fix.
  const alreadyReported = new Set(problems.map((p) => `${p.line}:${p.col}`));
  const schemaProblems = source
    .schemaProblems(issues, schema, data)
    .filter((problem) => !alreadyReported.has(`${problem.line}:${problem.col}`));
  throw new ConfigError([...problems, ...schemaProblems].sort((a, b) => a.line - b.line || a.col - b.col));
}

/**
 * Without the environment, GITLAB_URL and GITLAB_TOKEN are taken as set: the keys the file leaves out get a stand-in,
 * and their paths are returned as unknown.
 */
function assumeForgeVariables(data: Record<string, unknown>): string[] {
  const gitlab = data.gitlab ?? {};
  if (typeof gitlab !== 'object' || gitlab === null || Array.isArray(gitlab)) return [];
  const record = { ...(gitlab as Record<string, unknown>) };
  const assumed: string[] = [];
  for (const [key, variable] of [
    ['url', 'GITLAB_URL'],
    ['token', 'GITLAB_TOKEN'],
  ] as const) {
    if (record[key] !== undefined || (key === 'token' && record.token_file !== undefined)) continue;
    record[key] = `\${${variable}}`;
    assumed.push(formatPath(['gitlab', key]));
  }
  data.gitlab = record;
  return assumed;
}

/** GITLAB_URL or GITLAB_TOKEN set to nothing while the file leaves their key out: said as such, at the section. */
function emptyForgeVariables(
  source: YamlSource,
  data: Record<string, unknown>,
  env: NodeJS.ProcessEnv,
): ConfigProblem[] {
  const gitlab = data.gitlab;
  const record =
    typeof gitlab === 'object' && gitlab !== null && !Array.isArray(gitlab) ? (gitlab as Record<string, unknown>) : {};
  return (
    [
      ['url', 'GITLAB_URL'],
      ['token', 'GITLAB_TOKEN'],
    ] as const
  )
    .filter(
      ([key, variable]) =>
        record[key] === undefined && env[variable] === '' && !(key === 'token' && record.token_file !== undefined),
    )
    .map(([key, variable]) =>
      source.problemAt(
        ['gitlab', key],
        `environment variable ${variable} is empty; it stands in for gitlab.${key}, which the file leaves out`,
      ),
    );
}

/** Each policy name used a second time, reported at that second use; `unresolved` names (key paths) are not known. */
function duplicateNames(
  source: YamlSource,
  data: Record<string, unknown>,
  unresolved: ReadonlySet<string>,
): ConfigProblem[] {
  const policies = data.policies;
  if (!Array.isArray(policies)) return [];
  const firstUse = new Map<string, number>();
  const problems: ConfigProblem[] = [];
  policies.forEach((policy: unknown, index) => {
    const name = typeof policy === 'object' && policy !== null ? (policy as Record<string, unknown>).name : undefined;
    if (typeof name !== 'string' || unresolved.has(formatPath(['policies', index, 'name']))) return;
    const first = firstUse.get(name);
    if (first === undefined) firstUse.set(name, index);
    else
      problems.push(
        source.problemAt(
          ['policies', index, 'name'],
          `duplicate policy name ${quote(name)} (policies[${first}] has it already)`,
        ),
      );
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
  // A token file is the token: GITLAB_TOKEN left in the environment must not become a second one.
  const gitlab = data.gitlab as Record<string, unknown> | undefined;
  if (gitlab?.token_file === undefined) fill('gitlab', 'token', 'GITLAB_TOKEN');
  // REDIS_URL names one server: a file that names sentinels or a cluster has said where Redis is.
  const redis = data.redis as Record<string, unknown> | undefined;
  if (redis?.sentinels === undefined && redis?.cluster === undefined) fill('redis', 'url', 'REDIS_URL');
}

/**
 * What is allowed but probably wrong in a valid configuration, each pointing at the line that causes it. `validate`
 * prints these and still exits 0; the daemon logs them at startup. Pure: it reads only the configuration and the
 * positions remembered when the file was loaded (a configuration built in code points at line 1).
 */
/**
 * A policy as its entry in the file reads, variables filled in and defaults left out, for people (the console):
 * undefined for a configuration that was not loaded from a file.
 */
export function writtenPolicy(config: AppConfig, name: string): Record<string, unknown> | undefined {
  const data = sources.get(config)?.toData(1000) as { policies?: unknown } | undefined;
  const policies = Array.isArray(data?.policies) ? (data.policies as unknown[]) : [];
  const found = policies.find(
    (entry) => typeof entry === 'object' && entry !== null && (entry as Record<string, unknown>).name === name,
  );
  return found as Record<string, unknown> | undefined;
}

export function configWarnings(config: AppConfig, file: string): ConfigProblem[] {
  const warnings: ConfigProblem[] = [];
  const at = (path: PropertyKey[], message: string): ConfigProblem =>
    sources.get(config)?.problemAt(path, message) ?? { file, line: 1, col: 1, path: formatPath(path), message };

  const forge = new URL(config.gitlab.url);
  if (forge.protocol === 'http:' && !isLoopback(forge.hostname)) {
    // The token goes in a header of every request: over plain HTTP anyone on the way can read it and act as it.
    const origin = writtenIn(config, ['gitlab', 'url']) ? '' : ' (from GITLAB_URL)';
    warnings.push(
      at(
        ['gitlab', 'url'],
        `http:// to ${forge.host}${origin} sends the token unencrypted over the network; use https:// (plain http:// is for this machine only)`,
      ),
    );
  }
  return warnings;
}

/** 127.0.0.0/8, ::1 (also as an IPv4-mapped 127 address) and localhost, as the URL parser normalises them. */
export function isLoopback(hostname: string): boolean {
  const host = hostname
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/\.$/, '');
  if (host === 'localhost' || host === '::1') return true;
  if (/^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host)) return true;
  // The URL parser writes ::ffff:127.0.0.1 as ::ffff:7f00:1; 127.0.0.0/8 is 7f00:0 to 7fff:ffff.
  return /^::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}$/.test(host);
}

function writtenIn(config: AppConfig, path: string[]): boolean {
  return sources.get(config)?.doc.hasIn(path) ?? true;
}

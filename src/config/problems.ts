/** One thing wrong with a policy file, pointing at where the operator wrote it. */
export interface ConfigProblem {
  readonly file: string;
  readonly line: number;
  readonly col: number;
  /** `gitlab.timeout`, `policies[1].name`; `(syntax)` for a YAML syntax error. */
  readonly path: string;
  readonly message: string;
}

/**
 * Past this length a message is cut: some echo what the operator wrote (a regex's parse error quotes the pattern), and
 * a hostile file must not turn one problem into megabytes of output.
 */
const MAX_MESSAGE_LENGTH = 400;

export function formatProblem(problem: ConfigProblem): string {
  return `${problem.file}:${problem.line}:${problem.col} ${problem.path}: ${clip(problem.message, MAX_MESSAGE_LENGTH)}`;
}

/** A warning: the same shape as a problem, but it does not make the file invalid. */
export function formatWarning(warning: ConfigProblem): string {
  return formatProblem({ ...warning, message: `warning: ${warning.message}` });
}

/** A value the operator wrote, quoted for a message and cut to `max` characters, so an echo stays one short line. */
export function quote(value: unknown, max = 60): string {
  const text = typeof value === 'string' ? value : String(value);
  return JSON.stringify(clip(text, max));
}

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length - max} more characters)`;
}

/** Every problem found in one policy file, reported together so one edit can fix them all. */
export class ConfigError extends Error {
  constructor(readonly problems: readonly ConfigProblem[]) {
    super(problems.map(formatProblem).join('\n'));
    this.name = 'ConfigError';
  }
}

export function formatPath(path: ReadonlyArray<PropertyKey>): string {
  let text = '';
  for (const segment of path) {
    if (typeof segment === 'number') text += `[${segment}]`;
    else text += text ? `.${pathSegment(segment)}` : pathSegment(segment);
  }
  return text || '(root)';
}

/** A key as a path segment; a key of 500 kB (it happens, in hostile files) is cut, as a message's echo is. */
function pathSegment(segment: string | symbol): string {
  const text = String(segment);
  return text.length <= 60 ? text : `${text.slice(0, 60)}…`;
}

/** Levenshtein distance, for "did you mean" on unknown keys. */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length];
}

export function closestKey(unknown: string, known: readonly string[]): string | undefined {
  // No known key is this long; the edit distance of a huge key would only cost time.
  if (unknown.length > 100) return undefined;
  let best: { key: string; distance: number } | undefined;
  for (const key of known) {
    const distance = editDistance(unknown.toLowerCase(), key.toLowerCase());
    if (!best || distance < best.distance) best = { key, distance };
  }
  const allowed = Math.max(2, Math.floor(unknown.length / 3));
  return best && best.distance <= allowed ? best.key : undefined;
}

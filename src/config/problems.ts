/** One thing wrong with a policy file, pointing at where the operator wrote it. */
export interface ConfigProblem {
  readonly file: string;
  readonly line: number;
  readonly col: number;
  /** `gitlab.timeout`, `policies[1].name`; `(syntax)` for a YAML syntax error. */
  readonly path: string;
  readonly message: string;
}

export function formatProblem(problem: ConfigProblem): string {
  return `${problem.file}:${problem.line}:${problem.col} ${problem.path}: ${problem.message}`;
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
    else text += text ? `.${String(segment)}` : String(segment);
  }
  return text || '(root)';
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
  let best: { key: string; distance: number } | undefined;
  for (const key of known) {
    const distance = editDistance(unknown.toLowerCase(), key.toLowerCase());
    if (!best || distance < best.distance) best = { key, distance };
  }
  const allowed = Math.max(2, Math.floor(unknown.length / 3));
  return best && best.distance <= allowed ? best.key : undefined;
}

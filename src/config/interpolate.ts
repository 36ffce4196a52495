import { parse as parseYaml, Scalar, visit, type Document } from 'yaml';

export interface InterpolationProblem {
  readonly node: Scalar;
  readonly message: string;
}

export interface InterpolationResult {
  readonly problems: InterpolationProblem[];
  /**
   * With `assumeSet`: the scalars that read the environment, left as written; their values are unknown. With
   * `standIn`: the scalars where a stand-in took the place of a variable.
   */
  readonly unknown: Scalar[];
}

export interface InterpolationOptions {
  /** `validate --no-env`: every reference is taken as set, and left as written. */
  readonly assumeSet?: boolean;
  /**
   * `forgewarden test`: what a reference neither set nor given a default stands for (the test runs without the
   * environment, and without secrets), instead of a problem.
   */
  readonly standIn?: (name: string) => string;
}

/**
 * Replaces environment references in every string scalar of `doc`, in place, keeping each node's source range so
 * that later errors still point at the line the operator wrote. A plain (unquoted) scalar that becomes a number or
 * a boolean takes that type, so `port: ${PORT:-9464}` is a number as it would be written literally.
 */
export function interpolateEnvironment(
  doc: Document,
  env: NodeJS.ProcessEnv,
  options: InterpolationOptions = {},
): InterpolationResult {
  const problems: InterpolationProblem[] = [];
  const unknown: Scalar[] = [];
  visit(doc, {
    Scalar(_key, node) {
      if (typeof node.value !== 'string' || !node.value.includes('${')) return;
      const { text, problems: found, references, stoodIn } = substitute(node.value, env, options);
      for (const message of found) problems.push({ node, message });
      if (found.length > 0) return;
      if (stoodIn > 0) unknown.push(node);
      // Without the environment a value that reads it is not known: it stays as written, and its checks are skipped.
      if (options.assumeSet && references > 0) unknown.push(node);
      else node.value = node.type === Scalar.PLAIN ? retype(text) : text;
    },
  });
  return { problems, unknown };
}

const NAME = /[A-Za-z_][A-Za-z0-9_]*/y;

/** Enough to fix one value; a value with hundreds of broken references needs rewriting, not hundreds of lines. */
const MAX_PROBLEMS_PER_VALUE = 5;

/**
 * `${VAR}`, `${VAR:-default}` (a default runs to the first `}`), and `$${...}` for a literal `${...}`. A scanner that
 * reads each character a bounded number of times, not a regular expression: the backtracking one took quadratic time
 * on a long value full of unclosed `${`.
 */
export function substitute(
  value: string,
  env: NodeJS.ProcessEnv,
  options: InterpolationOptions = {},
): { text: string; problems: string[]; references: number; stoodIn: number } {
  const problems: string[] = [];
  let references = 0;
  let stoodIn = 0;
  let text = '';
  let position = 0;
  while (problems.length < MAX_PROBLEMS_PER_VALUE) {
    const start = value.indexOf('${', position);
    if (start < 0) break;
    // `$${` is the way to write `${` literally, so what follows it is nobody's business unless it is a reference.
    const escaped = start > position && value[start - 1] === '$';
    NAME.lastIndex = start + 2;
    const name = NAME.exec(value)?.[0];
    const afterName = start + 2 + (name?.length ?? 0);
    let end = name !== undefined && value[afterName] === '}' ? afterName : -1;
    let fallback: string | undefined;
    if (name !== undefined && value.startsWith(':-', afterName)) {
      end = value.indexOf('}', afterName + 2);
      if (end < 0) {
        // No `}` anywhere after this one: none of the `${` that follow can be closed either.
        if (!escaped) problems.push(`${excerpt(value, start)} is not closed with "}"; ${REFERENCE_FORMS}`);
        break;
      }
      fallback = value.slice(afterName + 2, end);
    }
    if (end < 0) {
      if (!escaped) {
        const unclosed = name !== undefined && afterName === value.length;
        problems.push(
          `${excerpt(value, start)} ${unclosed ? 'is not closed with "}"' : 'is not a valid reference'}; ${REFERENCE_FORMS}`,
        );
      }
      text += value.slice(position, start + 2);
      position = start + 2;
      continue;
    }
    if (escaped) {
      text += value.slice(position, start - 1) + value.slice(start, end + 1);
    } else if (options.assumeSet) {
      // Taken as set (`validate --no-env`): what it holds is for the environment the file will run in to say.
      references++;
      text += value.slice(position, end + 1);
    } else {
      const set = env[name!];
      if (set !== undefined && set !== '') text += value.slice(position, start) + set;
      else if (fallback !== undefined) text += value.slice(position, start) + fallback;
      else if (options.standIn) {
        stoodIn++;
        text += value.slice(position, start) + options.standIn(name!);
      } else
        problems.push(
          `environment variable ${name} ${set === '' ? 'is empty' : 'is not set'} (write \${${name}:-default} to give a default)`,
        );
    }
    position = end + 1;
  }
  return { text: text + value.slice(position), problems, references, stoodIn };
}

const REFERENCE_FORMS = 'write ${NAME} or ${NAME:-default} (a name is letters, digits and _), or $${ for a literal ${';

/** The reference at `start` as written, up to its `}` if that is near: enough to find it in the value. */
function excerpt(value: string, start: number): string {
  const near = value.slice(start, start + 40);
  const close = near.indexOf('}');
  return JSON.stringify(close >= 0 ? near.slice(0, close + 1) : value.length > start + 40 ? `${near}…` : near);
}

function retype(text: string): string | number | boolean | null {
  try {
    const value: unknown = parseYaml(text);
    if (typeof value === 'number' || typeof value === 'boolean' || value === null) return value;
  } catch {
    // Not a YAML scalar of its own: it stays the string it is.
  }
  return text;
}

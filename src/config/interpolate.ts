import { parse as parseYaml, Scalar, visit, type Document } from 'yaml';
import { quote } from './problems';

export interface InterpolationProblem {
  readonly node: Scalar;
  readonly message: string;
}

/**
 * Replaces environment references in every string scalar of `doc`, in place, keeping each node's source range so
 * that later errors still point at the line the operator wrote. A plain (unquoted) scalar that becomes a number or
 * a boolean takes that type, so `port: ${PORT:-9464}` is a number as it would be written literally.
 */
export function interpolateEnvironment(doc: Document, env: NodeJS.ProcessEnv): InterpolationProblem[] {
  const problems: InterpolationProblem[] = [];
  visit(doc, {
    Scalar(_key, node) {
      if (typeof node.value !== 'string' || !node.value.includes('${')) return;
      const { text, problems: found } = substitute(node.value, env);
      for (const message of found) problems.push({ node, message });
      if (found.length === 0) node.value = node.type === Scalar.PLAIN ? retype(text) : text;
    },
  });
  return problems;
}

const NAME = /[A-Za-z_][A-Za-z0-9_]*/y;

/**
 * `${VAR}`, `${VAR:-default}` (a default runs to the first `}`), and `$${...}` for a literal `${...}`. A scanner, not
 * a regular expression: a backtracking expression took quadratic time on a long value full of unclosed `${`.
 */
export function substitute(value: string, env: NodeJS.ProcessEnv): { text: string; problems: string[] } {
  const problems: string[] = [];
  let text = '';
  let position = 0;
  for (;;) {
    const start = value.indexOf('${', position);
    if (start < 0) break;
    const escaped = start > position && value[start - 1] === '$';
    NAME.lastIndex = start + 2;
    const name = NAME.exec(value)?.[0];
    let end = name === undefined ? -1 : start + 2 + name.length;
    let fallback: string | undefined;
    if (end >= 0 && value.startsWith(':-', end)) {
      const close = value.indexOf('}', end + 2);
      fallback = close < 0 ? undefined : value.slice(end + 2, close);
      end = close;
    } else if (end >= 0 && value[end] !== '}') {
      end = -1;
    }
    if (name === undefined || end < 0) {
      // `$${` is the way to write `${` literally, so what follows it is nobody's business.
      if (!escaped) problems.push(referenceProblem(value, start));
      text += value.slice(position, start + 2);
      position = start + 2;
      continue;
    }
    const whole = value.slice(start, end + 1);
    if (escaped) {
      text += value.slice(position, start - 1) + whole;
    } else {
      const set = env[name];
      if (set !== undefined && set !== '') text += value.slice(position, start) + set;
      else if (fallback !== undefined) text += value.slice(position, start) + fallback;
      else problems.push(`environment variable ${name} is not set (write \${${name}:-default} to give a default)`);
    }
    position = end + 1;
  }
  return { text: text + value.slice(position), problems };
}

function referenceProblem(value: string, start: number): string {
  const close = value.indexOf('}', start);
  const written = quote(close < 0 ? value.slice(start) : value.slice(start, close + 1), 40);
  const form = 'write ${NAME} or ${NAME:-default} (a name is letters, digits and _), or $${ for a literal ${';
  return close < 0 ? `${written} is not closed with "}"; ${form}` : `${written} is not a valid reference; ${form}`;
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


import { parse as parseYaml, Scalar, visit, type Document } from 'yaml';

/** `${VAR}`, `${VAR:-default}`, and `$${...}` for a literal `${...}`. */
const REFERENCE = /\$(\$)?\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

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
      const missing: string[] = [];
      const replaced = node.value.replace(REFERENCE, (whole, escaped: string | undefined, name: string, fallback: string | undefined) => {
        if (escaped) return whole.slice(1);
        const value = env[name];
        if (value !== undefined && value !== '') return value;
        if (fallback !== undefined) return fallback;
        missing.push(name);
        return '';
      });
      for (const name of missing) {
        problems.push({ node, message: `environment variable ${name} is not set (write \${${name}:-default} to give a default)` });
      }
      node.value = node.type === Scalar.PLAIN ? retype(replaced) : replaced;
    },
  });
  return problems;
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


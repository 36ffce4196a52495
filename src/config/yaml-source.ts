import { isAlias, isMap, isScalar, isSeq, LineCounter, parseDocument, type Document, type Node, type YAMLError } from 'yaml';
import type { z } from 'zod';
import { closestKey, ConfigError, formatPath, type ConfigProblem } from './problems';
import { knownKeysAt } from './schema-walk';

/**
 * A YAML file parsed with its source positions, so that every problem found later, by interpolation or by a zod
 * schema, can point at the line and column the operator wrote. Shared by the policy file and the sandbox's world
 * file.
 */
export class YamlSource {
  private constructor(
    readonly file: string,
    readonly text: string,
    readonly doc: Document,
    private readonly lineCounter: LineCounter,
  ) {}

  /** Parses `text`; a syntax error throws a ConfigError pointing at its line. */
  static parse(text: string, file: string): YamlSource {
    const lineCounter = new LineCounter();
    const doc = parseDocument(text, { lineCounter, uniqueKeys: true, prettyErrors: true });
    const source = new YamlSource(file, text, doc, lineCounter);
    if (doc.errors.length > 0) {
      throw new ConfigError(
        doc.errors.map((error) => ({ ...source.position(source.syntaxErrorOffset(error)), path: '(syntax)', message: firstLine(error.message) })),
      );
    }
    return source;
  }

  position(offset: number | undefined): { file: string; line: number; col: number } {
    const { line, col } = this.lineCounter.linePos(offset ?? 0);
    return { file: this.file, line, col };
  }

  /** A problem at `path`: at its value, or its key when asked, or the nearest key that holds a missing one. */
  problemAt(path: ReadonlyArray<PropertyKey>, message: string, want: 'key' | 'value' = 'value'): ConfigProblem {
    return { ...this.position(this.locate(path, want)), path: formatPath(path), message };
  }

  /** The problems of a failed validation of `data` (this file's content) against `schema`, in file order. */
  schemaProblems(issues: readonly z.core.$ZodIssue[], schema: z.ZodType, data: unknown): ConfigProblem[] {
    const problems = issues.flatMap((issue): ConfigProblem[] => {
      if (issue.code === 'unrecognized_keys') {
        const known = knownKeysAt(schema, data, issue.path);
        return issue.keys.map((key) => {
          const suggestion = closestKey(key, known);
          const hint = suggestion ? `; did you mean "${suggestion}"?` : known.length ? `; known keys: ${known.join(', ')}` : '';
          return this.problemAt([...issue.path, key], `unknown key "${key}"${hint}`, 'key');
        });
      }
      const missing = valueAt(data, issue.path) === undefined;
      const custom = !issue.message.startsWith('Invalid input');
      const message = missing ? (custom ? `missing: ${issue.message}` : 'missing: this key is required') : issue.message;
      return [this.problemAt(issue.path, message)];
    });
    return problems.sort((a, b) => a.line - b.line || a.col - b.col);
  }

  /** The key path of a node, for problems found while walking the document (interpolation). */
  pathOf(target: Node): PropertyKey[] {
    const walk = (node: unknown, path: PropertyKey[]): PropertyKey[] | undefined => {
      if (node === target) return path;
      if (isMap(node)) {
        for (const pair of node.items) {
          const found = walk(pair.value, [...path, isScalar(pair.key) ? String(pair.key.value) : '?']);
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
    return walk(this.doc.contents, []) ?? [];
  }

  private locate(path: ReadonlyArray<PropertyKey>, want: 'key' | 'value'): number | undefined {
    let node: unknown = this.doc.contents;
    let keyNode: Node | undefined;
    for (const segment of path) {
      if (isAlias(node)) node = node.resolve(this.doc);
      if (isMap(node)) {
        const pair = node.items.find((item) => isScalar(item.key) && String(item.key.value) === String(segment));
        if (!pair) return keyNode?.range?.[0] ?? node.range?.[0];
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

  /**
   * Where a syntax error starts. The parser notices an unclosed quote only where the input ends; the operator needs
   * the line where the quote was opened.
   */
  private syntaxErrorOffset(error: YAMLError): number {
    const quote = /^Missing closing (["'])quote/.exec(error.message)?.[1];
    if (error.code === 'MISSING_CHAR' && quote) {
      const opening = this.text.lastIndexOf(quote, error.pos[0] - 1);
      if (opening >= 0) return opening;
    }
    return error.pos[0];
  }
}

function valueAt(data: unknown, path: ReadonlyArray<PropertyKey>): unknown {
  let value = data;
  for (const segment of path) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = (value as Record<PropertyKey, unknown>)[segment];
  }
  return value;
}

function firstLine(message: string): string {
  return message.split('\n')[0].replace(/ at line \d+, column \d+:?$/, '');
}

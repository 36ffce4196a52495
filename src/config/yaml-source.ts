import {
  CST,
  isAlias,
  isMap,
  isPair,
  isScalar,
  isSeq,
  LineCounter,
  parseDocument,
  Parser,
  Scalar,
  visit,
  type Alias,
  type Document,
  type Node,
  type YAMLError,
} from 'yaml';
import type { z } from 'zod';
import { closestKey, ConfigError, formatPath, quote, type ConfigProblem } from './problems';
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

  /**
   * Parses `text`; a syntax error throws a ConfigError pointing at its line. The parser's warnings (an unknown tag, an
   * ambiguous alias) count as errors too: whatever the parser had to guess at, the daemon would run with.
   */
  static parse(text: string, file: string): YamlSource {
    const lineCounter = new LineCounter();
    const doc = withoutStackTraces(() => parseDocument(text, { lineCounter, uniqueKeys: true }));
    const source = new YamlSource(file, text, doc, lineCounter);
    // The parser reports running out of stack once per level it unwinds; the first says it all.
    const exhausted = doc.errors.find((error) => error.code === 'RESOURCE_EXHAUSTION');
    const errors = [
      ...doc.errors.filter((error) => error.code !== 'RESOURCE_EXHAUSTION' || error === exhausted),
      ...doc.warnings,
    ];
    const syntax = source.syntaxProblems(errors);
    const problems: ConfigProblem[] = syntax.slice(0, MAX_SYNTAX_PROBLEMS);
    if (syntax.length > MAX_SYNTAX_PROBLEMS) {
      // After the first few, syntax errors are mostly echoes of them that the parser could not tell as such.
      problems.push({
        ...syntax[MAX_SYNTAX_PROBLEMS],
        message: `${syntax.length - MAX_SYNTAX_PROBLEMS} more syntax errors from here on are not listed; fix the ones above first`,
      });
    }
    const control = CONTROL_CHARACTER.exec(text);
    if (control) {
      const code = control[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, '0');
      problems.push({
        ...source.position(control.index),
        path: '(file)',
        message: `control character U+${code} is not allowed in YAML; remove it, or write it as an escape in a double-quoted string`,
      });
    }
    if (problems.length === 0) {
      const deep = tooDeep(doc.contents);
      if (deep)
        problems.push({
          ...source.position(deep.range?.[0]),
          path: '(syntax)',
          message: `nested more than ${MAX_DEPTH} levels deep`,
        });
    }
    if (problems.length === 0) {
      // YAML 1.2 has no merge keys: `<<: *defaults` would be an ordinary key, not the merge it looks like, and the
      // problems that follow from that (a missing type...) would hide the cause.
      visit(doc, {
        Pair: (_key, pair, ancestors) => {
          if (!isScalar(pair.key) || pair.key.value !== '<<' || pair.key.type !== Scalar.PLAIN) return;
          const map = ancestors[ancestors.length - 1];
          problems.push({
            ...source.position(pair.key.range?.[0]),
            path: formatPath([...(isMap(map) ? source.pathOf(map) : []), '<<']),
            message: 'merge keys (<<) are not supported; write the keys out',
          });
        },
      });
    }
    if (problems.length > 0) throw new ConfigError(problems.sort((a, b) => a.line - b.line || a.col - b.col));
    return source;
  }

  /**
   * The document as plain data. An alias expands to a copy of what it names, so a few lines of nested aliases (a
   * "billion laughs") expand exponentially; past `maxAliasCount` copies the parser stops, and the file is invalid at
   * the alias where the nesting starts.
   */
  toData(maxAliasCount: number): unknown {
    try {
      return this.doc.toJS({ maxAliasCount });
    } catch (error) {
      if (!(error instanceof ReferenceError)) throw error;
      const alias = this.explodingAlias();
      throw new ConfigError([
        {
          ...this.position(alias?.range?.[0]),
          path: alias ? formatPath(this.pathOf(alias)) : '(root)',
          message: `aliases here expand to more than ${maxAliasCount} copies (nested aliases grow exponentially); write the values out instead`,
        },
      ]);
    }
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
          const hint = suggestion
            ? `; did you mean "${suggestion}"?`
            : known.length
              ? `; known keys: ${known.join(', ')}`
              : '';
          return this.problemAt([...issue.path, key], `unknown key ${quote(key)}${hint}`, 'key');
        });
      }
      const missing = valueAt(data, issue.path) === undefined;
      const custom = !issue.message.startsWith('Invalid input');
      const message = missing
        ? custom
          ? `missing: ${issue.message}`
          : 'missing: this key is required'
        : issue.message;
      return [this.problemAt(issue.path, message)];
    });
    return problems.sort((a, b) => a.line - b.line || a.col - b.col);
  }

  /** The key path of a node, for problems found while walking the document (interpolation). */
  pathOf(target: Node): PropertyKey[] {
    // One walk for all nodes: a file with a problem in every scalar must not cost a walk per problem.
    if (!this.paths) {
      const paths = new Map<unknown, PropertyKey[]>();
      const walk = (node: unknown, path: PropertyKey[]): void => {
        if (typeof node === 'object' && node !== null) paths.set(node, path);
        if (isMap(node)) {
          for (const pair of node.items) walk(pair.value, [...path, isScalar(pair.key) ? String(pair.key.value) : '?']);
        } else if (isSeq(node)) {
          node.items.forEach((item, index) => walk(item, [...path, index]));
        }
      };
      walk(this.doc.contents, []);
      this.paths = paths;
    }
    return this.paths.get(target) ?? [];
  }

  private paths: Map<unknown, PropertyKey[]> | undefined;

  /** The first alias whose target holds aliases itself: where exponential growth starts. Else the first alias. */
  private explodingAlias(): Alias | undefined {
    let first: Alias | undefined;
    let nested: Alias | undefined;
    visit(this.doc, {
      Alias: (_key, node) => {
        first ??= node;
        const target = node.resolve(this.doc);
        let holdsAlias = false;
        if (target) {
          visit(target, {
            Alias: () => {
              holdsAlias = true;
              return visit.BREAK;
            },
          });
        }
        if (holdsAlias) {
          nested = node;
          return visit.BREAK;
        }
        return undefined;
      },
    });
    return nested ?? first;
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
   * One problem per mistake, where it is: an unclosed `[` or `{` at the bracket (the parser notices it lines later, and
   * then stumbles over what follows), and of the errors left on one line only the first (the rest are its echoes).
   */
  private syntaxProblems(errors: readonly YAMLError[]): ConfigProblem[] {
    // Nested past the parser's depth, the file is that one problem; walking it again would only exhaust the stack here.
    const open =
      errors.length > 0 && !errors.some((error) => error.code === 'RESOURCE_EXHAUSTION')
        ? unclosedFlows(this.text)
        : [];
    // An unclosed quote swallows the bracket after it: the quote is the mistake, not the bracket left open.
    const quotes = errors.flatMap((error) =>
      error.code === 'MISSING_CHAR' && QUOTE.test(error.message) ? [this.syntaxErrorOffset(error)] : [],
    );
    const unclosed = open.filter((flow) => !quotes.some((quote) => quote > flow.open && quote < flow.end));
    const problems: ConfigProblem[] = unclosed.map((flow) => ({
      ...this.position(flow.open),
      path: '(syntax)',
      message: `this ${flow.bracket} is never closed: end the ${flow.bracket === '[' ? 'list with ]' : 'mapping with }'}`,
    }));
    const echoes = open.map((flow) => ({ from: flow.open, to: this.lineEnd(flow.end) }));
    const lines = new Set(problems.map((problem) => problem.line));
    // A token the parser cannot place (a stray ]) ends the document for it: every token after it is "unexpected" too.
    let strayToken = false;
    for (const error of errors) {
      const quote = error.code === 'MISSING_CHAR' && QUOTE.test(error.message);
      if (!quote && echoes.some((range) => error.pos[0] >= range.from && error.pos[0] <= range.to)) continue;
      if (error.code === 'UNEXPECTED_TOKEN' && / in YAML stream/.test(error.message)) {
        if (strayToken) continue;
        strayToken = true;
      }
      const at = this.position(this.syntaxErrorOffset(error));
      if (lines.has(at.line)) continue;
      lines.add(at.line);
      problems.push({ ...at, path: '(syntax)', message: syntaxMessage(error) });
    }
    return problems.sort((a, b) => a.line - b.line || a.col - b.col);
  }

  private lineEnd(offset: number): number {
    const end = this.text.indexOf('\n', offset);
    return end < 0 ? this.text.length : end;
  }

  /**
   * Where a syntax error starts. The parser notices an unclosed quote only where the input ends; the operator needs
   * the line where the quote was opened.
   */
  private syntaxErrorOffset(error: YAMLError): number {
    const quote = QUOTE.exec(error.message)?.[1];
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

/** Deeper than any policy or world file needs; far below what would exhaust the stack of later recursive steps. */
export const MAX_DEPTH = 64;

/**
 * C0 and C1 control characters other than tab, line feed, carriage return and NEL: YAML does not allow them raw, the
 * parser accepts them anyway, and in a value they are invisible.
 */
const CONTROL_CHARACTER = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u0084\u0086-\u009F]/;

/** The first node nested deeper than MAX_DEPTH, found without recursion (the depth is what is in question). */
function tooDeep(root: unknown): Node | undefined {
  const stack: Array<{ node: unknown; depth: number }> = [{ node: root, depth: 0 }];
  while (stack.length > 0) {
    const { node, depth } = stack.pop()!;
    if (!isMap(node) && !isSeq(node)) continue;
    if (depth >= MAX_DEPTH) return node;
    for (const item of [...node.items].reverse()) {
      if (isPair(item)) {
        stack.push({ node: item.value, depth: depth + 1 }, { node: item.key, depth: depth + 1 });
      } else {
        stack.push({ node: item, depth: depth + 1 });
      }
    }
  }
  return undefined;
}

const MAX_SYNTAX_PROBLEMS = 20;

/** The parser's word for a quoted text that runs to the end of the file. */
const QUOTE = /^Missing closing (["'])quote/;

/** The flow collections (`[...]`, `{...}`) of `text` that lack their closing bracket: where each opens and where it ran out. */
function unclosedFlows(text: string): Array<{ open: number; end: number; bracket: '[' | '{' }> {
  const found: Array<{ open: number; end: number; bracket: '[' | '{' }> = [];
  const check = (token: CST.Token | undefined): void => {
    if (token?.type !== 'flow-collection') return;
    const bracket = token.start.source === '{' ? '{' : '[';
    const closing = bracket === '{' ? 'flow-map-end' : 'flow-seq-end';
    if (!token.end.some((end) => end.type === closing))
      found.push({ open: token.start.offset, end: token.offset + CST.stringify(token).length, bracket });
  };
  for (const token of new Parser().parse(text)) {
    if (token.type !== 'document') continue;
    check(token.value);
    CST.visit(token, ({ key, value }) => {
      check(key ?? undefined);
      check(value ?? undefined);
    });
  }
  // An unclosed bracket inside another takes the outer one's closing bracket: the inner one is the mistake.
  return found.filter(
    (outer) => !found.some((inner) => inner !== outer && inner.open > outer.open && inner.open < outer.end),
  );
}

/**
 * Runs `parse` with error objects that capture no stack. The parser makes an Error per problem it finds, and a
 * megabyte of broken YAML has hundreds of thousands: capturing their stacks took most of the several seconds
 * `validate` needed. Only the message and position of these errors are ever used.
 */
function withoutStackTraces<T>(parse: () => T): T {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return parse();
  } finally {
    Error.stackTraceLimit = limit;
  }
}

/** The parser's message, in the operator's terms where it speaks to programmers. */
function syntaxMessage(error: YAMLError): string {
  const stray = /^Unexpected flow-(seq|map)-end token/.exec(error.message)?.[1];
  if (stray)
    return `this ${stray === 'seq' ? ']' : '}'} closes nothing: no ${stray === 'seq' ? '[' : '{'} is open here`;
  const quote = QUOTE.exec(error.message)?.[1];
  if (error.code === 'MISSING_CHAR' && quote) return `this ${quote} is never closed: end the text with ${quote}`;
  if (error.code === 'MULTIPLE_DOCS')
    return 'the file holds more than one YAML document (a second "---"); a policy file is one document';
  if (error.code === 'RESOURCE_EXHAUSTION') return `nested too deeply to parse (at most ${MAX_DEPTH} levels)`;
  return firstLine(error.message);
}

function firstLine(message: string): string {
  return message.split('\n')[0].replace(/ at line \d+, column \d+:?$/, '');
}

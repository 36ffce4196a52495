import { RE2JS } from 're2js';

/**
 * A regular expression in RE2 syntax, the dialect the forge itself uses. RE2 has no look-arounds and no
 * back-references, and matches in linear time, so a pattern from a policy file cannot hang the daemon.
 */
export class Re2Pattern {
  private readonly compiled: RE2JS;

  private constructor(readonly source: string) {
    this.compiled = RE2JS.compile(source);
  }

  /** Compiles `source`, or returns the reason it is not valid RE2. */
  static compile(source: string): Re2Pattern | { error: string } {
    try {
      return new Re2Pattern(source);
    } catch (error) {
      return { error: describeSyntaxError(error) };
    }
  }

  /**
   * Unanchored: true when the pattern matches anywhere in `text`. re2js's own `test` answers without building a
   * matcher or tracking groups, several times faster on long job logs than `matcher(text).find()`.
   */
  test(text: string): boolean {
    return this.compiled.test(text);
  }

  toString(): string {
    return this.source;
  }

  toJSON(): string {
    return this.source;
  }
}

function describeSyntaxError(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  // re2js prefixes its messages with "error parsing regexp: "; the caller already says it is a regexp.
  return text.replace(/^error parsing regexp:\s*/i, '');
}

import escapeHtml from 'escape-html';
import { redactor } from '../logging/redact';

/**
 * Markup made by `html` (or a list of it): the only thing that reaches a page unescaped. Every other value
 * interpolated into `html` is escaped, whatever it holds (a job name, a reason quoting the forge, a query string), and
 * masked like a log line first: a configured secret, or anything shaped like a token, never reaches a page.
 */
export class Html {
  constructor(readonly text: string) {}

  toString(): string {
    return this.text;
  }
}

/** What a page may interpolate: markup, a list of it, or a plain value that is escaped (absent ones print nothing). */
export type Interpolated = Html | readonly Interpolated[] | string | number | boolean | null | undefined;

/** A tagged template whose interpolations are escaped unless they are `Html` themselves. */
export function html(strings: TemplateStringsArray, ...values: Interpolated[]): Html {
  let text = strings[0] ?? '';
  values.forEach((value, index) => {
    text += render(value) + (strings[index + 1] ?? '');
  });
  return new Html(text);
}

function render(value: Interpolated): string {
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return (value as readonly Interpolated[]).map(render).join('');
  if (value === null || value === undefined || value === false) return '';
  return escapeHtml(typeof value === 'string' ? redactor.redactText(value) : String(value));
}

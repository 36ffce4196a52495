export const REDACTED = '[REDACTED]';

// Token formats the forge issues (personal, OAuth, deploy, runner, CI job, trigger, feed, incoming mail, agent,
// service account...): the prefix stays visible, which helps an operator tell which credential was involved.
const FORGE_TOKEN =
  /\b(gl(?:pat|oas|dt|rt|rtr|cbt|ptt|ft|imt|agent|soat|ffct|tst|wt)-)[A-Za-z0-9_-]{8,}(?:\.[A-Za-z0-9_-]+)*/g;
const RUNNER_REGISTRATION_TOKEN = /\bGR1348941[A-Za-z0-9_-]{10,}/g;
// `PRIVATE-TOKEN: x`, `"JOB-TOKEN":"x"`, `Authorization: Bearer x` in free text (request dumps, error messages).
const HEADER_VALUE =
  /\b(private[-_]token|job[-_]token|authorization)(["']?\s*[:=]\s*["']?)((?:bearer|basic|token)\s+)?([^\s"',;}&]+)/gi;
// `?private_token=x` / `&token=x` in URLs.
const URL_TOKEN = /([?&](?:private_token|access_token|job_token|token|password|secret)=)[^&#\s"']+/gi;
// `scheme://user:password@host`, as in redis://:password@host.
const URL_PASSWORD = /(\b[a-z][a-z0-9+.-]*:\/\/[^/\s:@]*:)[^@/\s]+@/gi;

// A private key in PEM or OpenSSH form, should one ever be handed to a logger (key rotation writes them to disk only).
const PRIVATE_KEY_BLOCK = /-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY-----[\s\S]*?(-----END \1PRIVATE KEY-----|$)/g;

/** Keys whose values are secrets whatever they look like. */
const SECRET_KEY =
  /^(private[-_]?token|job[-_]?token|access[-_]?token|token|authorization|password|secret|private[-_]?key|privatekey|cookie|set-cookie)$/i;

/**
 * Masks secrets in anything about to be logged or written to the audit trail: values the daemon was configured with
 * (its token), anything shaped like a forge token, credentials in headers and URLs, and values under secret-named
 * keys. It works on copies; the original objects are left alone.
 */
export class Redactor {
  private readonly secrets = new Set<string>();

  /** A value to mask wherever it appears. Very short values are ignored: masking them would garble every line. */
  addSecret(value: string | undefined): void {
    if (value && value.length >= 6) this.secrets.add(value);
  }

  /** Whether `text` holds one of the configured secrets (the forge token, the Redis password). */
  holdsSecret(text: string): boolean {
    for (const secret of this.secrets) if (text.includes(secret)) return true;
    return false;
  }

  redactText(text: string): string {
    let result = text;
    for (const secret of this.secrets) {
      if (result.includes(secret)) result = result.split(secret).join(REDACTED);
    }
    return result
      .replace(PRIVATE_KEY_BLOCK, `[${REDACTED} $1PRIVATE KEY]`)
      .replace(FORGE_TOKEN, `$1${REDACTED}`)
      .replace(RUNNER_REGISTRATION_TOKEN, REDACTED)
      .replace(
        HEADER_VALUE,
        (_all, name: string, separator: string, scheme: string | undefined) =>
          `${name}${separator}${scheme ?? ''}${REDACTED}`,
      )
      .replace(URL_TOKEN, `$1${REDACTED}`)
      .replace(URL_PASSWORD, `$1${REDACTED}@`);
  }

  /** A deep copy of `value` with every string redacted; errors become plain objects that keep message and stack. */
  redact(value: unknown, seen: WeakSet<object> = new WeakSet()): unknown {
    if (typeof value === 'string') return this.redactText(value);
    if (typeof value !== 'object' || value === null) return value;
    if (seen.has(value)) return '[Circular]';
    seen.add(value);
    if (value instanceof Error) {
      const copy: Record<string, unknown> = { name: value.name, message: this.redactText(value.message) };
      if (value.stack) copy.stack = this.redactText(value.stack);
      for (const [key, field] of Object.entries(value)) copy[key] = this.redactField(key, field, seen);
      if (value.cause !== undefined) copy.cause = this.redact(value.cause, seen);
      return copy;
    }
    if (Array.isArray(value)) return value.map((item) => this.redact(item, seen));
    if (value instanceof Date) return value;
    const copy: Record<string, unknown> = {};
    for (const [key, field] of Object.entries(value)) copy[key] = this.redactField(key, field, seen);
    return copy;
  }

  /** `field` as it may be shown under `key`: wholly masked under a secret-named key, else redacted like any value. */
  redactField(key: string, field: unknown, seen: WeakSet<object> = new WeakSet()): unknown {
    if (SECRET_KEY.test(key) && field !== null && field !== undefined && field !== '') return REDACTED;
    return this.redact(field, seen);
  }
}

/** One redactor per process, as there is one log output per process. */
export const redactor = new Redactor();

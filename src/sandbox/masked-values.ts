/**
 * The forge's `Ci::Maskable`: a masked value is one line of at least 8 characters; an expanded one (not `raw`) only of
 * the Base64 alphabet and `@:.~`, a raw one anything but whitespace.
 */
const MASKABLE = /^[a-zA-Z0-9_+=/@:.~-]{8,}$/;
const MASKABLE_RAW = /^[^\s]{8,}$/;

/** Why `value` cannot be masked, in words; undefined when it can. The API says only `is invalid`. */
export function maskProblem(value: string, raw: boolean): string | undefined {
  if ((raw ? MASKABLE_RAW : MASKABLE).test(value)) return undefined;
  if (/[\r\n]/.test(value)) return 'it must be a single line';
  if (value.length < 8) return 'it must be at least 8 characters';
  if (/\s/.test(value)) return 'it must not contain spaces';
  return 'it may contain only letters, digits and _+=/@:.~- (unless raw)';
}

/**
 * A value a policy stored as JSON, or undefined when it is missing or damaged: policies then treat it as never
 * written (a first poll, no open cleanup) rather than fail the pass on a broken key.
 */
export function readJson(text: string | undefined): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** Like readJson, for a stored object. */
export function readJsonObject(text: string | undefined): Record<string, unknown> | undefined {
  const value = readJson(text);
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

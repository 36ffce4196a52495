import { z } from 'zod';
import { quote } from '../../config/problems';

/** Pieces of the policy file's schema that the sections' schemas share. */

/**
 * `, got …` for a message: what the operator wrote, strings quoted, numbers and booleans as written, a list or a
 * mapping by its kind; nothing when the key is missing (the loader then says "missing").
 */
export function got(input: unknown): string {
  if (input === undefined) return '';
  if (typeof input === 'string') return `, got ${quote(input)}`;
  if (Array.isArray(input)) return ', got a list';
  if (typeof input === 'object' && input !== null) return ', got a mapping';
  return `, got ${typeof input === 'number' || typeof input === 'boolean' || input === null ? String(input) : typeof input}`;
}

export const flag = () => z.boolean({ error: (issue) => `expected true or false${got(issue.input)}` });

/**
 * Names unique in a list, each duplicate reported at its own `name`. Reads the raw items defensively: `when` runs it
 * while another item is invalid, so `validate` reports every problem at once.
 */
export function uniqueNames(what: string, listKey: string) {
  return (items: readonly unknown[], ctx: z.RefinementCtx): void => {
    const first = new Map<string, number>();
    items.forEach((item, index) => {
      const name = typeof item === 'object' && item !== null ? (item as Record<string, unknown>).name : undefined;
      if (typeof name !== 'string') return;
      const seen = first.get(name);
      if (seen === undefined) first.set(name, index);
      else
        ctx.addIssue({
          code: 'custom',
          path: [index, 'name'],
          message: `duplicate ${what} ${quote(name)} (${listKey}[${seen}] has it already); declare each once`,
        });
    });
  };
}

export const WHEN_A_LIST = { when: (payload: { value: unknown }) => Array.isArray(payload.value) };

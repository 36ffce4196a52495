import { Cron } from 'croner';
import { z } from 'zod';
import { DURATION_HINT, formatDuration, parseDuration } from './duration';
import { quote } from './problems';
import { compileGroupSelection, compileSelection, parseSelectionItem, type SelectionTarget } from './project-selection';
import { Re2Pattern } from './re2';

/**
 * Validators shared by the top-level schema and every policy type. Each one accepts what an operator writes in YAML
 * and yields the value the code wants (milliseconds, a compiled RE2 pattern...). JSON Schema is generated from the
 * input side, so editors complete and check the written form.
 */

const DURATION_FORM = /^\s*\d+(s|m|h|d|w|months?)\s*$/;

/**
 * A duration in the policy file's forms; yields milliseconds. With `min`, shorter ones are refused, saying so. `500ms`
 * is no form of the file, but where a minimum applies it is refused as too short, which is what the operator needs
 * to hear.
 */
export const duration = (options: { min?: number } = {}) =>
  z
    .string({ error: DURATION_HINT })
    .regex(DURATION_FORM, { error: (issue) => tooShort(issue.input, undefined, options.min) ?? DURATION_HINT })
    .transform((text, ctx) => {
      const ms = parseDuration(text);
      if (ms === undefined) {
        ctx.addIssue({ code: 'custom', message: `${DURATION_HINT}; ${quote(text.trim())} is too large` });
        return z.NEVER;
      }
      const short = tooShort(text, ms, options.min);
      if (short) {
        ctx.addIssue({ code: 'custom', message: short });
        return z.NEVER;
      }
      return ms;
    });

function tooShort(input: unknown, ms: number | undefined, min: number | undefined): string | undefined {
  if (min === undefined || typeof input !== 'string') return undefined;
  const written = input.trim();
  const value = ms ?? (/^\d+ms$/.test(written) ? Number(written.slice(0, -2)) : undefined);
  return value !== undefined && value < min ? `must be at least ${formatDuration(min)}, got ${written}` : undefined;
}

/** The shortest period anything may repeat at. */
export const MIN_PERIOD_MS = 1_000;

/**
 * A duration that is a period: how often a policy runs, or how old a key may grow. Zero would make the schedule fire
 * in a tight loop (Bull cannot even repeat `every: 0`, and the daemon crashed on it), so it is at least 1s. A delay,
 * a look-back or a grace period may be zero; those use `duration()`.
 */
export const period = () => duration({ min: MIN_PERIOD_MS });

const BYTE_UNITS = { B: 1, KiB: 1024, MiB: 1024 ** 2, GiB: 1024 ** 3, KB: 1000, MB: 1000 ** 2, GB: 1000 ** 3 } as const;
const BYTE_SIZE_HINT = 'expected a size such as 65536, 64KiB or 1MiB';

/** An amount of bytes: a whole number, or one with a unit (`64KiB`, `1MiB`, `500KB`); yields bytes. */
export const byteSize = () =>
  z.union([z.number(), z.string()], { error: BYTE_SIZE_HINT }).transform((value, ctx) => {
    const match = typeof value === 'string' ? /^\s*(\d+)\s*(B|KiB|MiB|GiB|KB|MB|GB)\s*$/.exec(value) : undefined;
    const bytes =
      typeof value === 'number'
        ? value
        : match
          ? Number(match[1]) * BYTE_UNITS[match[2] as keyof typeof BYTE_UNITS]
          : NaN;
    if (!Number.isSafeInteger(bytes) || bytes <= 0) {
      ctx.addIssue({ code: 'custom', message: BYTE_SIZE_HINT });
      return z.NEVER;
    }
    return bytes;
  });

/** A regular expression in RE2 syntax, compiled when loading so a bad one fails `validate`. */
export const re2 = () =>
  z.string({ error: 'expected a regular expression (RE2 syntax) as a string' }).transform((source, ctx) => {
    const compiled = Re2Pattern.compile(source);
    if ('error' in compiled) {
      ctx.addIssue({ code: 'custom', message: `invalid RE2 regular expression: ${compiled.error}` });
      return z.NEVER;
    }
    return compiled;
  });

/** A list of RE2 expressions, any of which may match. */
export const re2List = () => z.array(re2()).min(1, { error: 'give at least one expression, or leave the key out' });

const CRON_NICKNAMES = new Set(['@yearly', '@annually', '@monthly', '@weekly', '@daily', '@midnight', '@hourly']);

/** Why `expression` is not a 5-field cron expression, or undefined when it is one. */
export function cronProblem(expression: string): string | undefined {
  const trimmed = expression.trim();
  if (!CRON_NICKNAMES.has(trimmed)) {
    const fields = trimmed.split(/\s+/).filter(Boolean).length;
    if (fields !== 5) {
      return `expected a cron expression with 5 fields (minute hour day-of-month month day-of-week), got ${fields}`;
    }
  }
  try {
    new Cron(trimmed, { paused: true });
    return undefined;
  } catch (error) {
    return `invalid cron expression: ${error instanceof Error ? error.message : String(error)}`;
  }
}

/** A cron expression with 5 fields (or a nickname such as `@daily`). */
export const cron = () =>
  z.string({ error: 'expected a cron expression such as "0 3 * * *"' }).superRefine((expression, ctx) => {
    const problem = cronProblem(expression);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });

export function isTimeZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

/** An IANA time zone name such as `Europe/Berlin`. */
export const timezone = () =>
  z.string({ error: 'expected an IANA time zone name such as "Europe/Berlin"' }).refine(isTimeZone, {
    error: (issue) => `unknown time zone ${quote(issue.input)}; expected an IANA name such as "Europe/Berlin"`,
  });

// Path segments as the forge allows them: letters, digits, `_`, `.`, `-`, not starting with `-`.
const SEGMENT = '[A-Za-z0-9_.][A-Za-z0-9_.-]*';
const PROJECT_PATH = new RegExp(`^${SEGMENT}(/${SEGMENT})+$`);
const GROUP_PATH = new RegExp(`^${SEGMENT}(/${SEGMENT})*$`);

const numericId = () => z.number().int().positive({ error: 'an id must be a positive whole number' });

/** A project by numeric id (`42`) or full path (`acme/api`); a quoted number counts as an id as it does in the API. */
export const projectRef = () =>
  z.union(
    [
      numericId(),
      z
        .string()
        .regex(PROJECT_PATH, { error: 'expected a project id or its full path such as "acme/api"' })
        .or(z.string().regex(/^\d+$/).transform(Number)),
    ],
    { error: 'expected a project id (number) or full path such as "acme/api"' },
  );

/** A group by numeric id or full path (`acme` or `acme/platform`). */
export const groupRef = () =>
  z.union(
    [
      numericId(),
      z
        .string()
        .regex(/^\d+$/)
        .transform(Number)
        .or(z.string().regex(GROUP_PATH, { error: 'expected a group id or its full path such as "acme"' })),
    ],
    { error: 'expected a group id (number) or full path such as "acme"' },
  );

export type ProjectRef = z.output<ReturnType<typeof projectRef>>;
export type GroupRef = z.output<ReturnType<typeof groupRef>>;

const SELECTION_ITEM_HINT: Record<SelectionTarget, string> = {
  project: 'expected a project id, full path or glob such as "acme/*"; quote an exclude: "!acme/legacy-*"',
  group: 'expected a group id, full path or glob such as "acme/**"; quote an exclude: "!acme/legacy"',
};

/**
 * One item of a `projects:` (or `groups:`) list: an id, a full path, a glob, or any of them after `!` to exclude
 * (see project-selection.ts). A problem is reported at the item itself, so the loader points at its line.
 */
const selectionItem = (target: SelectionTarget) =>
  z.union([z.number(), z.string()], { error: SELECTION_ITEM_HINT[target] }).transform((written, ctx) => {
    const parsed = parseSelectionItem(written, target);
    if ('problem' in parsed) {
      ctx.addIssue({ code: 'custom', message: parsed.problem });
      return z.NEVER;
    }
    return parsed;
  });

/** A list of items with at least one include: a list of excludes alone would select nothing. */
const selectionItems = (target: SelectionTarget) => {
  const plural = `${target}s`;
  return z
    .array(selectionItem(target), {
      error: `expected a list of ${plural} such as ${target === 'project' ? '[acme/api, 42, "acme/tools/*"]' : '[acme, "acme/platform/**"]'}`,
    })
    .min(1, { error: `give at least one ${target}` })
    .superRefine((items, ctx) => {
      if (items.length > 0 && items.every((item) => item.exclude)) {
        ctx.addIssue({
          code: 'custom',
          message: `every item here excludes, so no ${target} is selected; add what to include, such as ${target === 'project' ? '"acme/**"' : '"acme"'}`,
        });
      }
    });
};

/** One item of a `projects:` list, read by `parseSelectionItem`. */
export const projectSelectionItem = () => selectionItem('project');

/** A `projects:` list of ids, full paths and globs, `!` excluding; yields a ProjectSelection. */
export const projectSelection = () =>
  selectionItems('project')
    .transform((items) => compileSelection(items))
    .describe('Projects by id (42), full path (acme/api) or glob ("acme/*", "acme/**"); a leading "!" excludes.');

/** A `groups:` list: the same syntax over group paths (`acme/**` = acme and every subgroup); yields a GroupSelection. */
export const groupSelection = () =>
  selectionItems('group')
    .transform((items) => compileGroupSelection(items))
    .describe(
      'Groups by id, full path (acme) or glob ("acme/*" its subgroups, "acme/**" it and all below); "!" excludes.',
    );

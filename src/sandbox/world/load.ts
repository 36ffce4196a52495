import { z } from 'zod';
import { readSourceFile } from '../../config/load';
import { ConfigError, formatPath, formatProblem } from '../../config/problems';
import { YamlSource } from '../../config/yaml-source';
import { timestamp } from './fields';
import { generateSchema, withGenerated } from './generate';
import { checkReferences } from './references';
import { deployKeySchema, groupSchema, projectSchema, settingsSchema, userSchema } from './schema';

/**
 * The world file: everything the sandbox forge knows at start. Validated strictly (unknown keys are errors, so a
 * typo never silently seeds nothing), with cross references checked (members, namespaces, job users). Omitted ids
 * are assigned in file order; omitted timestamps default to the sandbox clock's start.
 */
export const worldSchema = z
  .strictObject({
    /** Start of the sandbox clock; the real time when omitted. */
    now: timestamp.optional(),
    registry_host: z.string().default('registry.sandbox.test'),
    settings: settingsSchema.default({}),
    users: z.array(userSchema).default([]),
    groups: z.array(groupSchema).default([]),
    projects: z.array(projectSchema).default([]),
    deploy_keys: z.array(deployKeySchema).default([]),
    generate: generateSchema.optional(),
  })
  .superRefine((world, ctx) =>
    checkReferences(world, (path, message) => ctx.addIssue({ code: 'custom', path, message })),
  )
  // Runs only on a valid world: the generated groups and projects are valid by construction.
  .transform(({ generate, ...world }) => (generate ? withGenerated(world, generate) : world));

/** A world as written (ids, timestamps and most fields optional). */
export type World = z.input<typeof worldSchema>;
/** A validated world with defaults filled in. */
export type ParsedWorld = z.output<typeof worldSchema>;

export interface WorldProblem {
  file: string;
  /** Absent for a world built in code, which has no lines. */
  line?: number;
  col?: number;
  path: string;
  message: string;
}

/** A world file that cannot be used; `message` lists every problem as `FILE:LINE:COL key.path: message`. */
export class WorldError extends Error {
  constructor(readonly problems: WorldProblem[]) {
    super(problems.map(formatWorldProblem).join('\n'));
    this.name = 'WorldError';
  }
}

function formatWorldProblem(problem: WorldProblem): string {
  if (problem.line === undefined) return `${problem.file} ${problem.path}: ${problem.message}`;
  return formatProblem({ ...problem, line: problem.line, col: problem.col ?? 1 });
}

/** Reads and validates a YAML world file. Throws WorldError naming file, line, column and key of each problem. */
export function loadWorld(path: string): ParsedWorld {
  try {
    return parseWorldYaml(readSourceFile(path, 'world file'), path);
  } catch (error) {
    if (error instanceof ConfigError) throw new WorldError([...error.problems]);
    throw error;
  }
}

export function parseWorldYaml(text: string, file = '<world>'): ParsedWorld {
  let source: YamlSource;
  let data: unknown;
  try {
    source = YamlSource.parse(text, file);
    // Bounded like the policy file: nested aliases in a world file must not exhaust memory either.
    data = source.toData(1000) ?? {};
  } catch (error) {
    if (error instanceof ConfigError) throw new WorldError([...error.problems]);
    throw error;
  }
  const result = worldSchema.safeParse(data);
  if (result.success) return result.data;
  throw new WorldError(source.schemaProblems(result.error.issues, worldSchema, data));
}

/** Validates a world given as an object (built in code); problems carry the key path but no line. */
export function parseWorld(world: World | ParsedWorld, file = '<world>'): ParsedWorld {
  const result = worldSchema.safeParse(world);
  if (result.success) return result.data;
  throw new WorldError(
    result.error.issues.map((issue) => ({
      file,
      path: formatPath(issue.code === 'unrecognized_keys' ? [...issue.path, issue.keys[0]] : issue.path),
      message: issue.message,
    })),
  );
}

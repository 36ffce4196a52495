import { z } from 'zod';
import { pathSegment, visibility } from './fields';
import { groupSchema, memberSchema, projectSchema, type WorldGroup, type WorldProject } from './schema';

/** Upper bound of generated projects: a typo (`projects_per_group: 50000`) must not exhaust memory. */
const MAX_GENERATED_PROJECTS = 200_000;

/**
 * Many groups and projects for benchmarks and load tests, appended to those the file declares: `groups` top-level
 * groups `<path_prefix>-01`…, each with `subgroups_per_group` subgroups `sub-01`…, and `projects_per_group`
 * projects `project-01`… in every one of them (top-level and subgroup alike; numbers zero-padded), the last
 * `archived_projects_per_group` of each archived. Each project gets one pipeline with `failed_jobs_per_project`
 * failed jobs whose log names a transient failure. `members` join every generated top-level group (and so its
 * subgroups and projects). With `parent` (a group the file declares) the "top-level" groups are made its subgroups
 * instead, so that one glob (`big/**`) covers them all.
 */
export const generateSchema = z
  .strictObject({
    groups: z.number().int().positive(),
    subgroups_per_group: z.number().int().nonnegative().default(0),
    projects_per_group: z.number().int().nonnegative(),
    failed_jobs_per_project: z.number().int().nonnegative().max(1000).default(0),
    archived_projects_per_group: z.number().int().nonnegative().default(0),
    path_prefix: pathSegment.default('group'),
    /** Full path of a declared group the generated groups go under; top level when omitted. */
    parent: z.string().min(1).optional(),
    visibility: visibility.default('private'),
    members: z.array(memberSchema).default([]),
  })
  .refine((g) => g.groups * (1 + g.subgroups_per_group) * g.projects_per_group <= MAX_GENERATED_PROJECTS, {
    message: `generates more than ${MAX_GENERATED_PROJECTS.toLocaleString('en')} projects`,
  });
export type WorldGenerate = z.output<typeof generateSchema>;

/** Zero-padded to the width of the largest number, so generated paths sort as they count. */
function numbered(prefix: string, n: number, count: number): string {
  return `${prefix}-${String(n).padStart(Math.max(2, String(count).length), '0')}`;
}

/** Full paths of the generated "top-level" groups (under `parent` when there is one). */
export function generatedGroupPaths(generate: WorldGenerate): string[] {
  const above = generate.parent === undefined ? '' : `${generate.parent}/`;
  return Array.from(
    { length: generate.groups },
    (_, i) => `${above}${numbered(generate.path_prefix, i + 1, generate.groups)}`,
  );
}

/**
 * The world with the generated groups and projects appended, parsed by the same schemas as declared ones so that
 * they get the same defaults.
 */
export function withGenerated<W extends { groups: WorldGroup[]; projects: WorldProject[] }>(
  world: W,
  generate: WorldGenerate,
): W {
  const groups: z.input<typeof groupSchema>[] = [];
  const projects: z.input<typeof projectSchema>[] = [];
  const { visibility } = generate;
  const jobs = Array.from({ length: generate.failed_jobs_per_project }, (_, j) => ({
    name: `test-${j + 1}`,
    stage: 'test',
    status: 'failed' as const,
    // What job_retry's usual `failure_log` patterns (`connection reset`) match: a transient failure.
    log: `Running tests (${j + 1})\nERROR: connection reset by peer\n`,
    failure_reason: 'script_failure',
  }));
  const addProjects = (namespace: string): void => {
    for (let p = 1; p <= generate.projects_per_group; p++) {
      projects.push({
        path: numbered('project', p, generate.projects_per_group),
        namespace,
        visibility,
        archived: p > generate.projects_per_group - generate.archived_projects_per_group,
        pipelines: jobs.length > 0 ? [{ jobs }] : [],
      });
    }
  };
  const { parent } = generate;
  for (const top of generatedGroupPaths(generate)) {
    const path = parent === undefined ? top : top.slice(parent.length + 1);
    groups.push({ path, ...(parent === undefined ? {} : { parent }), visibility, members: generate.members });
    addProjects(top);
    for (let s = 1; s <= generate.subgroups_per_group; s++) {
      const sub = numbered('sub', s, generate.subgroups_per_group);
      groups.push({ path: sub, parent: top, visibility });
      addProjects(`${top}/${sub}`);
    }
  }
  return {
    ...world,
    groups: [...world.groups, ...z.array(groupSchema).parse(groups)],
    projects: [...world.projects, ...z.array(projectSchema).parse(projects)],
  };
}

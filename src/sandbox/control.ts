import { z } from 'zod';
import { JOB_STATUSES } from '../gitlab/types/jobs';
import { OVERRIDE_LEVELS, type AccessOverrideRecord } from './access-overrides';
import { parseDuration } from './duration';
import { RUNNERS_DOWN_DEFAULTS } from './ci-state';
import { faultRuleSchema } from './faults';
import { holdRuleSchema } from './holds';
import {
  ApiError,
  boolParam,
  intRouteParam,
  noContent,
  notFound,
  ok,
  paramError,
  type Reply,
  type RequestContext,
} from './http/context';
import { Router } from './http/router';
import { deleteGroup, deleteProject, deleteUserAsAdministrator, removeMember, SOLE_OWNER_MESSAGE } from './removal';
import {
  exportRateLimits,
  settingsView,
  type GroupRecord,
  type JobRecord,
  type ProjectRecord,
  type SandboxState,
  type SourceKind,
  type UserRecord,
} from './state';
import { exportPaddingBytes, exportRateLimitsSchema } from './world';

/**
 * The control API under `/__sandbox/` (no auth; the sandbox binds 127.0.0.1 by default). Tests and demos use it to
 * read what the forge received, move the sandbox clock, inject faults, change settings and move jobs along, and to
 * play the people who change the forge under the bot: archiving and deleting projects and groups, removing members,
 * deleting users, narrowing a token's access, revoking an access token or moving its expiry; to read the family
 * revocations of the forge's token reuse detection; and to take the runners down and bring them back (retried jobs
 * then fail, or succeed, at once).
 */

const clockSchema = z.union([
  z.strictObject({ advance: z.string() }),
  z.strictObject({ advance_seconds: z.number() }),
  z.strictObject({ now: z.string().refine((s) => !Number.isNaN(Date.parse(s)), { message: 'must be ISO 8601' }) }),
]);

const settingsSchema = z.strictObject({
  bulk_delete_delay_ms: z.number().int().nonnegative().optional(),
  bulk_delete_cap: z.number().int().positive().nullable().optional(),
  export_delay_ms: z.number().int().nonnegative().nullable().optional(),
  /** Merged into the current limits: `{"group_download_export": 0}` turns only that one off. */
  export_rate_limits: exportRateLimitsSchema.optional(),
  export_padding_bytes: exportPaddingBytes.optional(),
  download_bytes_per_second: z.number().int().nonnegative().optional(),
});

const jobSchema = z.strictObject({
  status: z.enum(JOB_STATUSES).optional(),
  log: z.string().nullable().optional(),
  append_log: z.string().optional(),
  failure_reason: z.string().optional(),
});

/** What runners do with a retried job from now on (see Runners); reason and log apply while they are down. */
const runnersSchema = z.strictObject({
  state: z.enum(['idle', 'down', 'up']),
  failure_reason: z.string().min(1).optional(),
  log: z.string().optional(),
});

/** A user, project or group as the control API names them: an id, or a username or full path. */
const reference = z.union([z.number().int().positive(), z.string().min(1)]);

/**
 * A person (or the test) changing one access token: its expiry (the day, `YYYY-MM-DD` or a timestamp cut to its day;
 * null: never) or revoking it. The token is named by its value or its id.
 */
const accessTokenSchema = z
  .strictObject({
    token: z.string().min(1).optional(),
    id: z.number().int().positive().optional(),
    expires_at: z
      .string()
      .refine((s) => !Number.isNaN(Date.parse(s)), { message: 'must be a date' })
      .nullable()
      .optional(),
    revoked: z.literal(true).optional(),
  })
  .refine((input) => (input.token === undefined) !== (input.id === undefined), {
    message: 'give exactly one of token and id',
  });

const accessSchema = z
  .strictObject({
    user: reference,
    project: reference.optional(),
    group: reference.optional(),
    level: z.literal(OVERRIDE_LEVELS),
  })
  .refine((input) => (input.project === undefined) !== (input.group === undefined), {
    message: 'give exactly one of project and group',
  });

export function controlRouter(): Router {
  const router = new Router()
    .get(
      '/requests',
      (ctx) => {
        const method = ctx.query.get('method')?.toUpperCase();
        const path = ctx.query.get('path');
        const pathPattern = path ? safeRegExp(path) : undefined;
        const entries = ctx.state.requestLog.filter(
          (e) => (!method || e.method === method) && (!pathPattern || pathPattern.test(e.path)),
        );
        return ok(entries);
      },
      'none',
    )
    .delete(
      '/requests',
      (ctx) => {
        ctx.state.requestLog.length = 0;
        return noContent();
      },
      'none',
    )
    // The log so far, emptied in the same step: a long benchmark reads it in parts without losing a request between.
    .post('/requests/drain', (ctx) => ok(ctx.state.requestLog.splice(0)), 'none')
    .get('/clock', (ctx) => ok({ now: ctx.state.nowIso() }), 'none')
    .post(
      '/clock',
      (ctx) => {
        const input = parse(clockSchema, ctx.body);
        if ('advance' in input) {
          const ms = parseDuration(input.advance);
          if (ms === undefined) throw paramError(`advance is not a duration: ${input.advance}`);
          ctx.state.clock.advance(ms);
        } else if ('advance_seconds' in input) {
          ctx.state.clock.advance(input.advance_seconds * 1000);
        } else {
          ctx.state.clock.set(new Date(input.now));
        }
        return ok({ now: ctx.state.nowIso() });
      },
      'none',
    )
    .get('/faults', (ctx) => ok(ctx.state.faults.list()), 'none')
    .post('/faults', (ctx) => ok(ctx.state.faults.add(parse(faultRuleSchema, ctx.body)), 201), 'none')
    .delete(
      '/faults',
      (ctx) => {
        ctx.state.faults.clear();
        return noContent();
      },
      'none',
    )
    .delete(
      '/faults/:id',
      (ctx) => {
        if (!ctx.state.faults.remove(intRouteParam(ctx, 'id'))) throw notFound('Fault');
        return noContent();
      },
      'none',
    )
    .get('/holds', (ctx) => ok(ctx.state.holds.list()), 'none')
    .post('/holds', (ctx) => ok(ctx.state.holds.add(parse(holdRuleSchema, ctx.body)), 201), 'none')
    .get(
      '/holds/:id',
      (ctx) => {
        const hold = ctx.state.holds.get(intRouteParam(ctx, 'id'));
        if (!hold) throw notFound('Hold');
        return ok(hold);
      },
      'none',
    )
    .delete(
      '/holds/:id',
      (ctx) => {
        if (!ctx.state.holds.release(intRouteParam(ctx, 'id'))) throw notFound('Hold');
        return noContent();
      },
      'none',
    )
    .get('/settings', (ctx) => ok(settingsView(ctx.state.settings)), 'none')
    .post(
      '/settings',
      (ctx) => {
        const input = parse(settingsSchema, ctx.body);
        if (input.bulk_delete_delay_ms !== undefined) ctx.state.settings.bulkDeleteDelayMs = input.bulk_delete_delay_ms;
        if (input.bulk_delete_cap !== undefined) ctx.state.settings.bulkDeleteCap = input.bulk_delete_cap;
        if (input.export_delay_ms !== undefined) ctx.state.settings.exportDelayMs = input.export_delay_ms;
        if (input.export_rate_limits !== undefined) {
          Object.assign(ctx.state.settings.exportRateLimits, exportRateLimits(input.export_rate_limits));
        }
        if (input.export_padding_bytes !== undefined)
          ctx.state.settings.exportPaddingBytes = input.export_padding_bytes;
        if (input.download_bytes_per_second !== undefined) {
          ctx.state.settings.downloadBytesPerSecond = input.download_bytes_per_second;
        }
        return ok(settingsView(ctx.state.settings));
      },
      'none',
    )
    .get('/state', (ctx) => ok(ctx.state.dump()), 'none')
    .get(
      '/idle',
      async (ctx) => {
        await ctx.state.whenIdle();
        await ctx.state.hooks.settled();
        return noContent();
      },
      'none',
    )
    // Webhook deliveries (hooks-state.ts): every attempt, oldest first; `settled` waits for those queued or in flight.
    .get(
      '/hook-deliveries',
      (ctx) => {
        const hookId = ctx.query.get('hook_id');
        const event = ctx.query.get('event');
        const entries = ctx.state.hooks.deliveries.filter(
          (d) => (!hookId || String(d.hook_id) === hookId) && (!event || d.event === event),
        );
        return ok(entries);
      },
      'none',
    )
    .delete(
      '/hook-deliveries',
      (ctx) => {
        ctx.state.hooks.deliveries.length = 0;
        return noContent();
      },
      'none',
    )
    .get(
      '/hook-deliveries/settled',
      async (ctx) => {
        await ctx.state.hooks.settled();
        return noContent();
      },
      'none',
    )
    .get('/runners', (ctx) => ok(ctx.state.runners), 'none')
    // Sandbox-only: a runner outage (retries fail at once with one signature) and its end (retries succeed at once).
    .post(
      '/runners',
      (ctx) => {
        const input = parse(runnersSchema, ctx.body);
        const runners = ctx.state.runners;
        runners.state = input.state;
        runners.failure_reason = input.failure_reason ?? RUNNERS_DOWN_DEFAULTS.failure_reason;
        runners.log = input.log ?? RUNNERS_DOWN_DEFAULTS.log;
        return ok(runners);
      },
      'none',
    )
    .post(
      '/jobs/:id',
      (ctx) => {
        const job = ctx.state.jobs.get(intRouteParam(ctx, 'id'));
        if (!job) throw notFound('Job');
        moveJob(ctx, job, parse(jobSchema, ctx.body));
        return ok(job);
      },
      'none',
    );
  return registerPersonControls(router);
}

/**
 * What a person or an administrator does to the forge while the bot works on it. Deletions are immediate, as on an
 * instance with delayed deletion off, and take everything hanging off the deleted record with them (`removal.ts`).
 * The sandbox's API has no archive, project or group deletion, or member endpoints, so these are the only way to make
 * those changes; `DELETE /users/:id` does what the admin API's does, without a token.
 */
function registerPersonControls(router: Router): Router {
  return (
    router
      .post(
        '/projects/:id/archive',
        (ctx) => ok(projectView(ctx.state, setArchived(controlProject(ctx), true))),
        'none',
      )
      .post(
        '/projects/:id/unarchive',
        (ctx) => ok(projectView(ctx.state, setArchived(controlProject(ctx), false))),
        'none',
      )
      .delete(
        '/projects/:id',
        (ctx) => {
          deleteProject(ctx.state, controlProject(ctx));
          return noContent();
        },
        'none',
      )
      .delete(
        '/groups/:id',
        (ctx) => {
          deleteGroup(ctx.state, controlGroup(ctx));
          return noContent();
        },
        'none',
      )
      .delete(
        '/projects/:id/members/:user_id',
        (ctx) => removeControlMember(ctx, 'project', controlProject(ctx).id),
        'none',
      )
      .delete('/groups/:id/members/:user_id', (ctx) => removeControlMember(ctx, 'group', controlGroup(ctx).id), 'none')
      .delete(
        '/users/:id',
        (ctx) => {
          const user = controlUser(ctx.state, ctx.params.id ?? '');
          if (!deleteUserAsAdministrator(ctx.state, user, boolParam(ctx, 'hard_delete') ?? false)) {
            throw new ApiError(409, { message: SOLE_OWNER_MESSAGE });
          }
          return noContent();
        },
        'none',
      )
      .get('/access', (ctx) => ok(ctx.state.accessOverrides.list()), 'none')
      .post(
        '/access',
        (ctx) => {
          const input = parse(accessSchema, ctx.body);
          const user = controlUser(ctx.state, input.user);
          const target =
            input.project !== undefined
              ? { source: 'project' as const, id: sourceOrThrow(ctx.state.project(input.project), 'Project').id }
              : { source: 'group' as const, id: sourceOrThrow(ctx.state.group(input.group ?? ''), 'Group').id };
          const record: AccessOverrideRecord = {
            user_id: user.id,
            source: target.source,
            source_id: target.id,
            access_level: input.level,
          };
          ctx.state.accessOverrides.set(record);
          return ok(record);
        },
        'none',
      )
      .delete(
        '/access',
        (ctx) => {
          ctx.state.accessOverrides.clear();
          return noContent();
        },
        'none',
      )
      .get('/access-tokens', (ctx) => ok(ctx.state.accessTokens.views()), 'none')
      .post(
        '/access-tokens',
        (ctx) => {
          const input = parse(accessTokenSchema, ctx.body);
          const tokens = ctx.state.accessTokens;
          const token = input.token !== undefined ? tokens.byTokenValue(input.token) : tokens.tokens.get(input.id ?? 0);
          if (!token) throw notFound('Access token');
          if (input.expires_at !== undefined)
            token.expires_at = input.expires_at === null ? null : new Date(input.expires_at).toISOString().slice(0, 10);
          if (input.revoked) token.revoked = true;
          return ok(tokens.views().find((view) => view.id === token.id));
        },
        'none',
      )
      // Every family revocation the forge's reuse detection made: a bot that never trips it leaves this empty.
      .get('/token-family-revocations', (ctx) => ok(ctx.state.accessTokens.familyRevocations), 'none')
      .delete(
        '/token-family-revocations',
        (ctx) => {
          ctx.state.accessTokens.familyRevocations.length = 0;
          return noContent();
        },
        'none',
      )
  );
}

function controlProject(ctx: RequestContext): ProjectRecord {
  return sourceOrThrow(ctx.state.project(ctx.params.id ?? ''), 'Project');
}

function controlGroup(ctx: RequestContext): GroupRecord {
  return sourceOrThrow(ctx.state.group(ctx.params.id ?? ''), 'Group');
}

function sourceOrThrow<T>(record: T | undefined, what: 'Project' | 'Group'): T {
  if (record === undefined) throw notFound(what);
  return record;
}

/** By id, or by username (case-insensitive, as the forge routes them). */
function controlUser(state: SandboxState, ref: string | number): UserRecord {
  const user = typeof ref === 'number' || /^\d+$/.test(ref) ? state.users.get(Number(ref)) : state.userByUsername(ref);
  if (!user) throw notFound('User');
  return user;
}

function removeControlMember(ctx: RequestContext, source: SourceKind, sourceId: number): Reply {
  const user = controlUser(ctx.state, ctx.params.user_id ?? '');
  if (!removeMember(ctx.state, source, sourceId, user.id)) throw notFound('Member');
  return noContent();
}

function setArchived(project: ProjectRecord, archived: boolean): ProjectRecord {
  project.archived = archived;
  return project;
}

/** The record as `GET /__sandbox/state` shows it. */
function projectView(state: SandboxState, project: ProjectRecord): Record<string, unknown> {
  return { ...project, path_with_namespace: state.projectFullPath(project) };
}

/**
 * Moves a job the way a runner would; a running job gets a job token if it has none. The change reaches the
 * project's webhooks through touchPipeline: the answer comes at once, the deliveries follow.
 */
function moveJob(ctx: RequestContext, job: JobRecord, input: z.output<typeof jobSchema>): void {
  const now = ctx.state.nowIso();
  if (input.status !== undefined && input.status !== job.status) {
    job.status = input.status;
    if (input.status === 'created' || input.status === 'pending' || input.status === 'manual') {
      job.started_at = null;
      job.finished_at = null;
    } else if (input.status === 'running') {
      job.started_at = now;
      job.finished_at = null;
      job.token ??= `glcbt-sandbox-${job.id}`;
    } else {
      job.started_at ??= now;
      job.finished_at = now;
    }
    job.failure_reason = input.status === 'failed' ? (input.failure_reason ?? 'script_failure') : null;
    ctx.state.touchPipeline(job.pipeline_id);
  }
  if (input.log !== undefined) job.log = input.log;
  if (input.append_log !== undefined) job.log = (job.log ?? '') + input.append_log;
}

function parse<T extends z.ZodType>(schema: T, body: unknown): z.output<T> {
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  const problems = result.error.issues.map((i) => `${i.path.map(String).join('.') || '(body)'}: ${i.message}`);
  throw new ApiError(400, { error: problems.join('; ') });
}

function safeRegExp(pattern: string): RegExp {
  try {
    return new RegExp(pattern);
  } catch {
    throw paramError('path is not a valid regular expression');
  }
}

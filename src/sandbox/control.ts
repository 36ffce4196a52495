import { z } from 'zod';
import { parseDuration } from './duration';
import { faultRuleSchema } from './faults';
import { ApiError, intRouteParam, noContent, notFound, ok, paramError, type RequestContext } from './http/context';
import { Router } from './http/router';
import { exportRateLimits, settingsView, type JobRecord } from './state';
import { exportPaddingBytes, exportRateLimitsSchema, JOB_STATUSES } from './world';

/**
 * The control API under `/__sandbox/` (no auth; the sandbox binds 127.0.0.1 by default). Tests and demos use it to
 * read what the forge received, move the sandbox clock, inject faults, change settings and move jobs along.
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

export function controlRouter(): Router {
  return new Router()
    .get('/requests', (ctx) => {
      const method = ctx.query.get('method')?.toUpperCase();
      const path = ctx.query.get('path');
      const pathPattern = path ? safeRegExp(path) : undefined;
      const entries = ctx.state.requestLog.filter(
        (e) => (!method || e.method === method) && (!pathPattern || pathPattern.test(e.path)),
      );
      return ok(entries);
    }, 'none')
    .delete('/requests', (ctx) => {
      ctx.state.requestLog.length = 0;
      return noContent();
    }, 'none')
    .get('/clock', (ctx) => ok({ now: ctx.state.nowIso() }), 'none')
    .post('/clock', (ctx) => {
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
    }, 'none')
    .get('/faults', (ctx) => ok(ctx.state.faults.list()), 'none')
    .post('/faults', (ctx) => ok(ctx.state.faults.add(parse(faultRuleSchema, ctx.body)), 201), 'none')
    .delete('/faults', (ctx) => {
      ctx.state.faults.clear();
      return noContent();
    }, 'none')
    .delete('/faults/:id', (ctx) => {
      if (!ctx.state.faults.remove(intRouteParam(ctx, 'id'))) throw notFound('Fault');
      return noContent();
    }, 'none')
    .get('/settings', (ctx) => ok(settingsView(ctx.state.settings)), 'none')
    .post('/settings', (ctx) => {
      const input = parse(settingsSchema, ctx.body);
      if (input.bulk_delete_delay_ms !== undefined) ctx.state.settings.bulkDeleteDelayMs = input.bulk_delete_delay_ms;
      if (input.bulk_delete_cap !== undefined) ctx.state.settings.bulkDeleteCap = input.bulk_delete_cap;
      if (input.export_delay_ms !== undefined) ctx.state.settings.exportDelayMs = input.export_delay_ms;
      if (input.export_rate_limits !== undefined) {
        Object.assign(ctx.state.settings.exportRateLimits, exportRateLimits(input.export_rate_limits));
      }
      if (input.export_padding_bytes !== undefined) ctx.state.settings.exportPaddingBytes = input.export_padding_bytes;
      if (input.download_bytes_per_second !== undefined) {
        ctx.state.settings.downloadBytesPerSecond = input.download_bytes_per_second;
      }
      return ok(settingsView(ctx.state.settings));
    }, 'none')
    .get('/state', (ctx) => ok(ctx.state.dump()), 'none')
    .get('/idle', async (ctx) => {
      await ctx.state.whenIdle();
      await ctx.state.hooks.settled();
      return noContent();
    }, 'none')
    // Webhook deliveries (hooks-state.ts): every attempt, oldest first; `settled` waits for those queued or in flight.
    .get('/hook-deliveries', (ctx) => {
      const hookId = ctx.query.get('hook_id');
      const event = ctx.query.get('event');
      const entries = ctx.state.hooks.deliveries.filter(
        (d) => (!hookId || String(d.hook_id) === hookId) && (!event || d.event === event),
      );
      return ok(entries);
    }, 'none')
    .delete('/hook-deliveries', (ctx) => {
      ctx.state.hooks.deliveries.length = 0;
      return noContent();
    }, 'none')
    .get('/hook-deliveries/settled', async (ctx) => {
      await ctx.state.hooks.settled();
      return noContent();
    }, 'none')
    .post('/jobs/:id', (ctx) => {
      const job = ctx.state.jobs.get(intRouteParam(ctx, 'id'));
      if (!job) throw notFound('Job');
      moveJob(ctx, job, parse(jobSchema, ctx.body));
      return ok(job);
    }, 'none');
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

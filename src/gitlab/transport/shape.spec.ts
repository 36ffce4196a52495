import { z } from 'zod';
import type { Job, JobPipeline, JobUser } from '../types/jobs';
import type { SshKey } from '../types/keys';
import { checkShape, nullableShape, shapeOf } from './shape';

describe('checkShape', () => {
  const pipeline = shapeOf<JobPipeline>()({ id: z.number(), project_id: z.number() });
  const job = shapeOf<Job>()({
    id: z.number(),
    finished_at: z.string().nullable(),
    pipeline,
    user: nullableShape(shapeOf<JobUser>()({ username: z.string() })),
  });
  const good = { id: 1, finished_at: null, pipeline: { id: 2, project_id: 3, extra: 'kept' }, user: null, other: [1] };

  it('accepts a record with the checked fields, whatever else it holds', () => {
    expect(checkShape(job, good)).toBeUndefined();
    expect(checkShape(job, { ...good, user: { username: 'ann' } })).toBeUndefined();
  });

  it('names the first problem by its dotted field, and counts the others', () => {
    expect(checkShape(job, { ...good, id: '1', pipeline: {} })).toEqual({
      field: 'id',
      problem: 'field id must be a number, got "1" (and 2 more)',
    });
    expect(checkShape(job, { ...good, user: { username: 7 } })).toEqual({
      field: 'user.username',
      problem: 'field user.username must be a string, got 7',
    });
    expect(checkShape(job, { ...good, user: 'ann' })).toEqual({
      field: 'user',
      problem: 'field user must be an object or null, got "ann"',
    });
  });

  it('says what came instead of a record, shortened', () => {
    expect(checkShape(job, [good])).toEqual({
      field: '',
      problem: `expected an object, got ${JSON.stringify([good]).slice(0, 59)}…`,
    });
    expect(checkShape(job, null)).toEqual({ field: '', problem: 'expected an object, got null' });
  });

  it('only lets a shape name fields of its type, with checks that accept what the type allows', () => {
    // Compile-time guarantees, kept honest by `npm run typecheck`: each line below must fail to compile.
    // @ts-expect-error `idd` is not a field of Job
    shapeOf<Job>()({ idd: z.number() });
    // @ts-expect-error finished_at may be null
    shapeOf<Job>()({ finished_at: z.string() });
    // @ts-expect-error expires_at may be left out
    shapeOf<SshKey>()({ expires_at: z.string().nullable() });
    // @ts-expect-error a nested record is checked with the shape of its own type
    shapeOf<Job>()({ pipeline: shapeOf<SshKey>()({ id: z.number() }) });
    expect(shapeOf<SshKey>()({ expires_at: z.string().nullish() }).schema).toBeInstanceOf(z.ZodObject);
  });
});

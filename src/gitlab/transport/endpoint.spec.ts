import { buildQuery, endpoint } from './endpoint';

describe('endpoint template', () => {
  it('URL-encodes a full path so it stays one segment', () => {
    const e = endpoint`projects/${'acme/api'}/jobs`;
    expect(e.path).toBe('projects/acme%2Fapi/jobs');
    expect(e.route).toBe('projects/:param/jobs');
  });

  it('passes integer ids through and encodes every interpolation', () => {
    expect(endpoint`projects/${42}/jobs/${7}/trace`.path).toBe('projects/42/jobs/7/trace');
    expect(endpoint`projects/${'a b/c?d#e'}/registry/repositories/${3}/tags/${'v1+rc/1'}`.path).toBe(
      'projects/a%20b%2Fc%3Fd%23e/registry/repositories/3/tags/v1%2Brc%2F1',
    );
  });

  it('rejects ids that would address another endpoint', () => {
    expect(() => endpoint`projects/${''}/jobs`).toThrow(TypeError);
    expect(() => endpoint`projects/${'..'}/jobs`).toThrow(TypeError);
    expect(() => endpoint`projects/${1.5}/jobs`).toThrow(TypeError);
    expect(() => endpoint`projects/${Number.NaN}/jobs`).toThrow(TypeError);
  });

  it('refuses undefined, null and NaN, naming the parameter, instead of addressing `.../undefined/...`', () => {
    // What a forge answer without `project_id` or `id` would otherwise hand over.
    const missing = {} as { project_id: number; id: number };
    expect(() => endpoint`projects/${missing.project_id}/jobs/${7}/retry`).toThrow(
      new TypeError(
        'path parameter #1 of projects/:param/jobs/:param/retry (after "projects/") must be a number or a string, got undefined',
      ),
    );
    expect(() => endpoint`projects/${1}/registry/repositories/${missing.id}/tags`).toThrow(
      new TypeError(
        'path parameter #2 of projects/:param/registry/repositories/:param/tags (after "repositories/") must be a number or a string, got undefined',
      ),
    );
    expect(() => endpoint`users/${null as unknown as number}/keys`).toThrow(/#1 of users\/:param\/keys .*got null$/);
    expect(() => endpoint`projects/${1}/jobs/${Number('x')}`).toThrow(
      new TypeError('path parameter #2 of projects/:param/jobs/:param (after "jobs/") must be an integer, got NaN'),
    );
    expect(() => endpoint`projects/${{} as unknown as number}/jobs`).toThrow(/got an object$/);
  });
});

describe('buildQuery', () => {
  it('sends arrays as repeated name[]=v', () => {
    expect(buildQuery({ scope: ['failed', 'canceled'] })).toBe('?scope%5B%5D=failed&scope%5B%5D=canceled');
  });

  it('sends a single value plainly, booleans and numbers as text, omits undefined and null', () => {
    expect(buildQuery({ scope: 'failed', include_retried: true, page: 2, search: undefined, other: null })).toBe(
      '?scope=failed&include_retried=true&page=2',
    );
  });

  it('sends objects as name[key]=v and dates as ISO 8601', () => {
    const query = buildQuery({
      custom_attributes: { team: 'core' },
      created_after: new Date(Date.UTC(2024, 4, 1)),
    });
    const params = new URLSearchParams(query.slice(1));
    expect(params.get('custom_attributes[team]')).toBe('core');
    expect(params.get('created_after')).toBe('2024-05-01T00:00:00.000Z');
  });

  it('is empty without parameters', () => {
    expect(buildQuery(undefined)).toBe('');
    expect(buildQuery({ a: undefined })).toBe('');
  });
});

import { MockForge } from '../../../test/support/gitlab/mock-forge';
import { jobs, users } from '../../../test/support/gitlab/records';
import { PageLimitError } from './errors';
import { parseLinkHeader, parseNextPage } from './pagination';

type Item = { id: number };
const items = (from: number, count: number): Item[] => Array.from({ length: count }, (_, i) => ({ id: from - i }));

describe('pagination', () => {
  let forge: MockForge;
  beforeEach(() => {
    forge = new MockForge();
  });
  afterEach(async () => {
    await forge.close();
  });

  /** Two users per page and always a next page (`X-Next-Page` one more than the page asked for). */
  function endlessUsers(): void {
    forge.pool
      .intercept({ path: (p) => p.startsWith('/api/v4/users'), method: 'GET' })
      .reply((request) => {
        const page = Number(new URL(request.path, 'https://forge.test').searchParams.get('page'));
        return { statusCode: 200, data: users(1000 - 2 * page, 2), responseOptions: { headers: { 'x-next-page': String(page + 1) } } };
      })
      .persist();
  }

  async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
    const out: T[] = [];
    for await (const item of iterable) out.push(item);
    return out;
  }

  it('follows Link rel="next" with per_page=100, keeping the filters, and ignores missing totals', async () => {
    const base = 'https://forge.test/api/v4/projects/acme%2Fapi/jobs';
    forge.pool
      .intercept({ path: '/api/v4/projects/acme%2Fapi/jobs?scope%5B%5D=failed&page=1&per_page=100', method: 'GET' })
      .reply(200, jobs(300, 100), {
        headers: { link: `<${base}?id_before=201&per_page=100&scope%5B%5D=failed>; rel="next"` },
      });
    forge.pool
      .intercept({ path: '/api/v4/projects/acme%2Fapi/jobs?id_before=201&per_page=100&scope%5B%5D=failed', method: 'GET' })
      .reply(200, jobs(200, 100), {
        headers: { link: `<${base}?id_before=101&per_page=100&scope%5B%5D=failed>; rel="next", <${base}?page=1>; rel="first"` },
      });
    forge.pool
      .intercept({ path: '/api/v4/projects/acme%2Fapi/jobs?id_before=101&per_page=100&scope%5B%5D=failed', method: 'GET' })
      .reply(200, jobs(100, 40), { headers: { link: `<${base}?page=1>; rel="first"` } });
    const client = forge.client();
    const got = await collect(client.jobs.all('acme/api', { scope: ['failed'] }));
    expect(got).toHaveLength(240);
    expect(got[0].id).toBe(300);
    expect(got[239].id).toBe(61);
    expect(forge.calls()).toHaveLength(3);
  });

  it('follows X-Next-Page when there is no Link header', async () => {
    const path = (page: number) => `/api/v4/namespaces?search=ac&page=${page}&per_page=100`;
    forge.pool.intercept({ path: path(1), method: 'GET' }).reply(200, items(10, 100), { headers: { 'x-next-page': '2' } });
    forge.pool.intercept({ path: path(2), method: 'GET' }).reply(200, items(9, 100), { headers: { 'x-next-page': '3' } });
    forge.pool.intercept({ path: path(3), method: 'GET' }).reply(200, items(8, 3), { headers: { 'x-next-page': '' } });
    const got = await collect(forge.client().namespaces.all({ search: 'ac' }));
    expect(got).toHaveLength(203);
    expect(forge.calls().map((c) => c.path)).toEqual([path(1), path(2), path(3)]);
  });

  it('stops fetching when the consumer breaks out', async () => {
    forge.pool
      .intercept({ path: (p) => p.startsWith('/api/v4/namespaces'), method: 'GET' })
      .reply(200, items(1000, 100), { headers: { 'x-next-page': '2' } })
      .persist();
    let seen = 0;
    for await (const ns of forge.client().namespaces.all()) {
      seen++;
      if (ns.id === 951) break;
    }
    expect(seen).toBe(50);
    expect(forge.calls()).toHaveLength(1);
  });

  it('stops at the first item matching `until`, without yielding it or fetching further', async () => {
    const path = (page: number) => `/api/v4/projects/7/jobs?page=${page}&per_page=100`;
    forge.pool.intercept({ path: path(1), method: 'GET' }).reply(200, jobs(500, 100), { headers: { 'x-next-page': '2' } });
    forge.pool.intercept({ path: path(2), method: 'GET' }).reply(200, jobs(400, 100), { headers: { 'x-next-page': '3' } });
    const lastSeen = 350;
    const got = await collect(forge.client().jobs.all(7, {}, { until: (job) => job.id <= lastSeen }));
    expect(got.map((j) => j.id)).toEqual(items(500, 150).map((j) => j.id));
    expect(forge.calls()).toHaveLength(2);
  });

  it('raises PageLimitError at the page guard instead of truncating silently', async () => {
    endlessUsers();
    const seen: number[] = [];
    const run = async () => {
      for await (const user of forge.client().users.all({}, { maxPages: 3 })) seen.push(user.id);
    };
    await expect(run()).rejects.toBeInstanceOf(PageLimitError);
    expect(seen).toHaveLength(6);
    expect(forge.calls()).toHaveLength(3);
  });

  it('can end quietly at the page guard when asked', async () => {
    endlessUsers();
    const got = await collect(forge.client().users.all({}, { maxPages: 2, onPageLimit: 'stop' }));
    expect(got).toHaveLength(4);
  });

  it('takes only path and query from a Link to another host', async () => {
    forge.pool
      .intercept({ path: '/api/v4/users?page=1&per_page=100', method: 'GET' })
      .reply(200, users(5, 1), { headers: { link: '<http://internal:8080/api/v4/users?page=2&per_page=100>; rel="next"' } });
    forge.pool.intercept({ path: '/api/v4/users?page=2&per_page=100', method: 'GET' }).reply(200, users(4, 1));
    expect(await collect(forge.client().users.all())).toHaveLength(2);
  });

  describe('a next page that was already read', () => {
    const base = 'https://forge.test/api/v4/projects/1/jobs';

    it('ends the listing when Link rel="next" of page 2 points back to page 1', async () => {
      forge.pool
        .intercept({ path: '/api/v4/projects/1/jobs?page=1&per_page=100', method: 'GET' })
        .reply(200, jobs(300, 100), { headers: { link: `<${base}?page=2&per_page=100>; rel="next"` } })
        .persist();
      forge.pool
        .intercept({ path: '/api/v4/projects/1/jobs?page=2&per_page=100', method: 'GET' })
        // Same page, other parameter order: still page 1.
        .reply(200, jobs(200, 100), { headers: { link: `<${base}?per_page=100&page=1>; rel="next"` } })
        .persist();
      const got = await collect(forge.client().jobs.all(1));
      expect(got.map((j) => j.id)).toEqual(jobs(300, 200).map((j) => j.id));
      expect(forge.calls().map((c) => c.path)).toEqual([
        '/api/v4/projects/1/jobs?page=1&per_page=100',
        '/api/v4/projects/1/jobs?page=2&per_page=100',
      ]);
    });

    const path = (page: number) => `/api/v4/users?page=${page}&per_page=100`;

    it('ends the listing when X-Next-Page points back', async () => {
      forge.pool.intercept({ path: path(1), method: 'GET' }).reply(200, users(10, 2), { headers: { 'x-next-page': '2' } }).persist();
      forge.pool.intercept({ path: path(2), method: 'GET' }).reply(200, users(8, 2), { headers: { 'x-next-page': '1' } }).persist();
      expect((await collect(forge.client().users.all())).map((u) => u.id)).toEqual([10, 9, 8, 7]);
      expect(forge.calls()).toHaveLength(2);
    });

    it('ends the listing when a page names itself as the next', async () => {
      forge.pool.intercept({ path: path(1), method: 'GET' }).reply(200, users(10, 2), { headers: { 'x-next-page': '1' } }).persist();
      expect((await collect(forge.client().users.all())).map((u) => u.id)).toEqual([10, 9]);
      expect(forge.calls()).toHaveLength(1);
    });
  });

  it('parses Link and X-Next-Page headers', () => {
    const links = parseLinkHeader(
      '<https://f/api/v4/x?page=2>; rel="next", <https://f/api/v4/x?page=1>; rel="first", <https://f/api/v4/x?page=9>; rel=last',
    );
    expect(links.get('next')).toBe('https://f/api/v4/x?page=2');
    expect(links.get('last')).toBe('https://f/api/v4/x?page=9');
    expect(parseLinkHeader(undefined).size).toBe(0);
    expect(parseNextPage('')).toBeUndefined();
    expect(parseNextPage('4')).toBe(4);
    expect(parseNextPage('0')).toBeUndefined();
  });
});

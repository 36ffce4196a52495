import { MockForge } from '../../../test/support/gitlab/mock-forge';
import { aUser, jobs, users } from '../../../test/support/gitlab/records';
import { NotFoundError, PageLimitError } from './errors';
import { pageNumberOf, parseLinkHeader, parseNextPage, parseTotalPages, withPageNumber } from './pagination';

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
        return {
          statusCode: 200,
          data: users(1000 - 2 * page, 2),
          responseOptions: { headers: { 'x-next-page': String(page + 1) } },
        };
      })
      .persist();
  }

  async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
    const out: T[] = [];
    for await (const item of iterable) out.push(item);
    return out;
  }

  /** What `break` in a for-await loop does to the listing. */
  async function stopEarly(listing: AsyncIterator<unknown>): Promise<void> {
    if (!listing.return) throw new TypeError('a listing must be stoppable');
    await listing.return();
  }

  /** Lets pending requests, answers and fake-clock sleeps run their course. */
  async function settle(): Promise<void> {
    for (let i = 0; i < 50; i++) await new Promise((resolve) => setImmediate(resolve));
  }

  it('follows Link rel="next" with per_page=100, keeping the filters, and ignores missing totals', async () => {
    const base = 'https://forge.test/api/v4/projects/acme%2Fapi/jobs';
    forge.pool
      .intercept({ path: '/api/v4/projects/acme%2Fapi/jobs?scope%5B%5D=failed&page=1&per_page=100', method: 'GET' })
      .reply(200, jobs(300, 100), {
        headers: { link: `<${base}?id_before=201&per_page=100&scope%5B%5D=failed>; rel="next"` },
      });
    forge.pool
      .intercept({
        path: '/api/v4/projects/acme%2Fapi/jobs?id_before=201&per_page=100&scope%5B%5D=failed',
        method: 'GET',
      })
      .reply(200, jobs(200, 100), {
        headers: {
          link: `<${base}?id_before=101&per_page=100&scope%5B%5D=failed>; rel="next", <${base}?page=1>; rel="first"`,
        },
      });
    forge.pool
      .intercept({
        path: '/api/v4/projects/acme%2Fapi/jobs?id_before=101&per_page=100&scope%5B%5D=failed',
        method: 'GET',
      })
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
    forge.pool
      .intercept({ path: path(1), method: 'GET' })
      .reply(200, items(10, 100), { headers: { 'x-next-page': '2' } });
    forge.pool
      .intercept({ path: path(2), method: 'GET' })
      .reply(200, items(9, 100), { headers: { 'x-next-page': '3' } });
    forge.pool.intercept({ path: path(3), method: 'GET' }).reply(200, items(8, 3), { headers: { 'x-next-page': '' } });
    const got = await collect(forge.client().namespaces.all({ search: 'ac' }));
    expect(got).toHaveLength(203);
    expect(forge.calls().map((c) => c.path)).toEqual([path(1), path(2), path(3)]);
  });

  it('stops fetching when the consumer breaks out, past the one page read ahead', async () => {
    const path = (page: number) => `/api/v4/namespaces?page=${page}&per_page=100`;
    forge.pool
      .intercept({ path: (p) => p.startsWith('/api/v4/namespaces'), method: 'GET' })
      .reply((request) => {
        const page = Number(new URL(request.path, 'https://forge.test').searchParams.get('page'));
        const headers = { 'x-next-page': String(page + 1) };
        return { statusCode: 200, data: items(1000, 100), responseOptions: { headers } };
      })
      .persist();
    let seen = 0;
    for await (const ns of forge.client().namespaces.all()) {
      seen++;
      if (ns.id === 951) break;
    }
    await settle();
    expect(seen).toBe(50);
    expect(forge.calls().map((c) => c.path)).toEqual([path(1), path(2)].slice(0, forge.calls().length));
  });

  it('stops at the first item matching `until`, without yielding it or asking past the page read ahead', async () => {
    const path = (page: number) => `/api/v4/projects/7/jobs?page=${page}&per_page=100`;
    forge.pool
      .intercept({ path: path(1), method: 'GET' })
      .reply(200, jobs(500, 100), { headers: { 'x-next-page': '2' } });
    forge.pool
      .intercept({ path: path(2), method: 'GET' })
      .reply(200, jobs(400, 100), { headers: { 'x-next-page': '3' } });
    forge.pool
      .intercept({ path: path(3), method: 'GET' })
      .reply(200, jobs(300, 100), { headers: { 'x-next-page': '4' } });
    const lastSeen = 350;
    const got = await collect(forge.client().jobs.all(7, {}, { until: (job) => job.id <= lastSeen }));
    await settle();
    expect(got.map((j) => j.id)).toEqual(items(500, 150).map((j) => j.id));
    expect(forge.calls().map((c) => c.path)).toEqual([path(1), path(2), path(3)].slice(0, forge.calls().length));
    expect(forge.calls().length).toBeGreaterThanOrEqual(2);
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
    forge.pool.intercept({ path: '/api/v4/users?page=1&per_page=100', method: 'GET' }).reply(200, users(5, 1), {
      headers: { link: '<http://internal:8080/api/v4/users?page=2&per_page=100>; rel="next"' },
    });
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
      forge.pool
        .intercept({ path: path(1), method: 'GET' })
        .reply(200, users(10, 2), { headers: { 'x-next-page': '2' } })
        .persist();
      forge.pool
        .intercept({ path: path(2), method: 'GET' })
        .reply(200, users(8, 2), { headers: { 'x-next-page': '1' } })
        .persist();
      expect((await collect(forge.client().users.all())).map((u) => u.id)).toEqual([10, 9, 8, 7]);
      expect(forge.calls()).toHaveLength(2);
    });

    it('ends the listing when a page names itself as the next', async () => {
      forge.pool
        .intercept({ path: path(1), method: 'GET' })
        .reply(200, users(10, 2), { headers: { 'x-next-page': '1' } })
        .persist();
      expect((await collect(forge.client().users.all())).map((u) => u.id)).toEqual([10, 9]);
      expect(forge.calls()).toHaveLength(1);
    });
  });

  describe('reading ahead', () => {
    const FIRST_ID = 1000;
    const idsOfPages = (from: number, to: number): number[] =>
      Array.from({ length: 2 * (to - from + 1) }, (_, i) => FIRST_ID - 2 * (from - 1) - i);
    const pageOf = (id: number): number => Math.floor((FIRST_ID - id) / 2) + 1;
    const usersPath = (page: number) => `/api/v4/users?page=${page}&per_page=100`;

    /**
     * `/users` as `pages` pages of two users each, ids counting down from FIRST_ID. Each answer is held until the test
     * releases it, so that what the forge has in flight at once can be counted; `answerAtOnce` releases the held
     * answers one macrotask later, the highest page first, so that later pages arrive before earlier ones.
     */
    class HeldUserPages {
      /** Page numbers in the order the forge was asked for them. */
      readonly asked: number[] = [];
      mostInFlight = 0;
      answerAtOnce = false;
      /** Answers not given yet, each with its page (two listings may ask for the same page at once). */
      private held: Array<{ page: number; answer: () => void }> = [];
      private flushScheduled = false;

      constructor(
        readonly pages: number,
        options: { totals: boolean; statuses?: Record<number, number> },
      ) {
        for (let page = 1; page <= pages; page++) {
          const status = options.statuses?.[page] ?? 200;
          const headers: Record<string, string> = { 'x-next-page': page < pages ? String(page + 1) : '' };
          if (options.totals) Object.assign(headers, { 'x-total': String(2 * pages), 'x-total-pages': String(pages) });
          forge.pool
            .intercept({ path: usersPath(page), method: 'GET' })
            .reply(status, () => this.answer(page, status), { headers })
            .persist();
        }
      }

      get inFlight(): number {
        return this.held.length;
      }

      release(page: number): void {
        const answered = this.held.filter((request) => request.page === page);
        this.held = this.held.filter((request) => request.page !== page);
        for (const request of answered) request.answer();
      }

      releaseAll(): void {
        for (const page of [...new Set(this.held.map((request) => request.page))].sort((a, b) => b - a)) {
          this.release(page);
        }
      }

      private answer(page: number, status: number): Promise<unknown> {
        this.asked.push(page);
        return new Promise((resolve) => {
          this.held.push({
            page,
            answer: () =>
              resolve(status === 200 ? users(FIRST_ID - 2 * (page - 1), 2) : { message: `${status} Failed` }),
          });
          this.mostInFlight = Math.max(this.mostInFlight, this.held.length);
          if (this.answerAtOnce && !this.flushScheduled) {
            this.flushScheduled = true;
            setImmediate(() => {
              this.flushScheduled = false;
              this.releaseAll();
            });
          }
        });
      }
    }

    it('with X-Total-Pages, asks for up to `concurrency` pages at once and yields the items in page order', async () => {
      const pages = new HeldUserPages(12, { totals: true });
      pages.answerAtOnce = true;
      const got = await collect(forge.client({ concurrency: 3 }).users.all());
      expect(got.map((u) => u.id)).toEqual(idsOfPages(1, 12));
      expect(pages.mostInFlight).toBeGreaterThan(1);
      expect(pages.mostInFlight).toBeLessThanOrEqual(3);
      expect([...pages.asked].sort((a, b) => a - b)).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
      expect(forge.calls()).toHaveLength(12);
    });

    it('shares the concurrency bound with whatever else the client is sending', async () => {
      const pages = new HeldUserPages(8, { totals: true });
      pages.answerAtOnce = true;
      const client = forge.client({ concurrency: 4 });
      const [first, second] = await Promise.all([collect(client.users.all()), collect(client.users.all())]);
      expect(first.map((u) => u.id)).toEqual(idsOfPages(1, 8));
      expect(second.map((u) => u.id)).toEqual(idsOfPages(1, 8));
      expect(pages.mostInFlight).toBeLessThanOrEqual(4);
      expect(pages.asked).toHaveLength(16);
    });

    it('without totals, asks for the next page while the consumer is still on the current one', async () => {
      const pages = new HeldUserPages(3, { totals: false });
      const listing = forge.client({ concurrency: 4 }).users.all()[Symbol.asyncIterator]();
      const first = listing.next();
      await settle();
      pages.release(1);
      expect((await first).value?.id).toBe(FIRST_ID);
      await settle();
      // The consumer holds the first of page 1's two items and has not asked for more.
      expect(pages.asked).toEqual([1, 2]);
      pages.release(2);
      await settle();
      // One page ahead, not more: page 3 waits until the consumer reaches page 2.
      expect(pages.asked).toEqual([1, 2]);
      pages.answerAtOnce = true;
      const rest: number[] = [];
      for (let next = await listing.next(); !next.done; next = await listing.next()) rest.push(next.value.id);
      expect(rest).toEqual(idsOfPages(1, 3).slice(1));
      expect(pages.asked).toEqual([1, 2, 3]);
      expect(pages.mostInFlight).toBe(1);
    });

    it('after `until` matches, has asked for no more than the window of pages beyond the stop', async () => {
      const pages = new HeldUserPages(20, { totals: true });
      pages.answerAtOnce = true;
      const stopAt = idsOfPages(5, 5)[1];
      const got = await collect(forge.client({ concurrency: 3 }).users.all({}, { until: (u) => u.id === stopAt }));
      await settle();
      expect(got.map((u) => u.id)).toEqual(idsOfPages(1, 5).slice(0, -1));
      expect(Math.max(...pages.asked)).toBeLessThanOrEqual(pageOf(stopAt) + 3);
      expect(new Set(pages.asked).size).toBe(pages.asked.length);
    });

    it('does not send pages that were still waiting for a connection slot when the consumer stopped', async () => {
      const pages = new HeldUserPages(10, { totals: true });
      let answerOther: (() => void) | undefined;
      forge.pool
        .intercept({ path: '/api/v4/users/77', method: 'GET' })
        .reply(200, () => new Promise((resolve) => (answerOther = () => resolve(aUser({ id: 77 })))));
      const client = forge.client({ concurrency: 2 });
      const other = client.users.show(77);
      const listing = client.users.all()[Symbol.asyncIterator]();
      const first = listing.next();
      await settle();
      pages.release(1);
      await first;
      await settle();
      // One slot is the other request's, so page 2 is in flight and page 3 waits for a slot.
      expect(pages.asked).toEqual([1, 2]);
      await stopEarly(listing);
      answerOther?.();
      pages.releaseAll();
      await other;
      await settle();
      expect(pages.asked).toEqual([1, 2]);
    });

    it('never asks for a page past maxPages, then raises PageLimitError or stops as asked', async () => {
      const pages = new HeldUserPages(10, { totals: true });
      pages.answerAtOnce = true;
      const seen: number[] = [];
      const run = async () => {
        for await (const user of forge.client({ concurrency: 3 }).users.all({}, { maxPages: 4 })) seen.push(user.id);
      };
      const error: unknown = await run().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(PageLimitError);
      expect((error as PageLimitError).path).toBe(usersPath(5).slice('/api/v4/'.length));
      expect(seen).toEqual(idsOfPages(1, 4));
      const quietly = await collect(
        forge.client({ concurrency: 3 }).users.all({}, { maxPages: 4, onPageLimit: 'stop' }),
      );
      expect(quietly.map((u) => u.id)).toEqual(idsOfPages(1, 4));
      expect(Math.max(...pages.asked)).toBe(4);
      expect(pages.asked).toHaveLength(8);
    });

    it('raises a failed page where its items would have been, after the items of the pages before it', async () => {
      const pages = new HeldUserPages(10, { totals: true, statuses: { 4: 404 } });
      pages.answerAtOnce = true;
      const seen: number[] = [];
      const run = async () => {
        for await (const user of forge.client({ concurrency: 3 }).users.all()) seen.push(user.id);
      };
      const error: unknown = await run().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(NotFoundError);
      expect((error as NotFoundError).path).toBe(usersPath(4).slice('/api/v4/'.length));
      // Page 4 answered before pages 2 and 3 (highest page first), yet their items all came first.
      expect(seen).toEqual(idsOfPages(1, 3));
      expect(Math.max(...pages.asked)).toBeLessThanOrEqual(4 + 3);
    });

    it('numbers the pages from the link to page 2 as the forge spelled it', async () => {
      const base = 'https://forge.test/api/v4/namespaces';
      const path = (page: number) => `/api/v4/namespaces?per_page=100&search=ac&page=${page}`;
      const counted = (page: number) => ({
        headers: { 'x-total-pages': '3', link: `<${base}?per_page=100&search=ac&page=${page + 1}>; rel="next"` },
      });
      forge.pool
        .intercept({ path: '/api/v4/namespaces?search=ac&page=1&per_page=100', method: 'GET' })
        .reply(200, items(6, 2), counted(1));
      forge.pool.intercept({ path: path(2), method: 'GET' }).reply(200, items(4, 2), counted(2));
      forge.pool
        .intercept({ path: path(3), method: 'GET' })
        .reply(200, items(2, 2), { headers: { 'x-total-pages': '3' } });
      const got = await collect(forge.client().namespaces.all({ search: 'ac' }));
      expect(got.map((n) => n.id)).toEqual([6, 5, 4, 3, 2, 1]);
      expect(
        forge
          .calls()
          .map((c) => c.path)
          .slice(1),
      ).toEqual([path(2), path(3)]);
    });

    it('follows a keyset Link one page at a time even when the first page carries totals', async () => {
      const base = 'https://forge.test/api/v4/projects/1/jobs';
      forge.pool
        .intercept({ path: '/api/v4/projects/1/jobs?page=1&per_page=100', method: 'GET' })
        .reply(200, jobs(300, 100), {
          headers: { 'x-total-pages': '3', link: `<${base}?id_before=201&per_page=100>; rel="next"` },
        });
      forge.pool
        .intercept({ path: '/api/v4/projects/1/jobs?id_before=201&per_page=100', method: 'GET' })
        .reply(200, jobs(200, 100), { headers: { 'x-total-pages': '3' } });
      const got = await collect(forge.client().jobs.all(1));
      expect(got).toHaveLength(200);
      expect(forge.calls().map((c) => c.path)).toEqual([
        '/api/v4/projects/1/jobs?page=1&per_page=100',
        '/api/v4/projects/1/jobs?id_before=201&per_page=100',
      ]);
    });

    it('goes on past the counted pages when the last of them says there is more', async () => {
      // Counted at 2 pages; records were added before page 2 was read, so page 2 names a page 3.
      const page = (n: number, totalPages: number, next: string) =>
        forge.pool
          .intercept({ path: usersPath(n), method: 'GET' })
          .reply(200, users(8 - 2 * n, 2), { headers: { 'x-total-pages': String(totalPages), 'x-next-page': next } });
      page(1, 2, '2');
      page(2, 3, '3');
      page(3, 3, '');
      const got = await collect(forge.client().users.all());
      expect(got.map((u) => u.id)).toEqual([6, 5, 4, 3, 2, 1]);
      expect(forge.calls()).toHaveLength(3);
    });

    it('leaves no unhandled rejection when pages read ahead fail after the consumer stopped', async () => {
      // 500 is final; 503 is retried, and the retry must find the listing abandoned instead of asking again.
      const pages = new HeldUserPages(10, { totals: true, statuses: { 2: 500, 3: 503, 4: 404 } });
      const unhandled: unknown[] = [];
      const onUnhandled = (reason: unknown) => unhandled.push(reason);
      process.on('unhandledRejection', onUnhandled);
      try {
        const listing = forge.client({ concurrency: 3 }).users.all()[Symbol.asyncIterator]();
        const first = listing.next();
        await settle();
        pages.release(1);
        expect((await first).value?.id).toBe(FIRST_ID);
        await settle();
        expect(pages.inFlight).toBe(3);
        await stopEarly(listing);
        pages.releaseAll();
        await settle();
        expect(unhandled).toEqual([]);
        expect(pages.asked).toEqual([1, 2, 3, 4]);
      } finally {
        process.off('unhandledRejection', onUnhandled);
      }
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
    expect(parseTotalPages(undefined)).toBeUndefined();
    expect(parseTotalPages('12')).toBe(12);
  });

  it('rewrites only the page number of a link, leaving the filters as the forge spelled them', () => {
    const link = 'projects/1/jobs?scope%5B%5D=failed&page=2&per_page=100&search=a+b';
    expect(withPageNumber(link, 7)).toBe('projects/1/jobs?scope%5B%5D=failed&page=7&per_page=100&search=a+b');
    expect(pageNumberOf(link)).toBe(2);
    expect(pageNumberOf('projects/1/jobs?id_before=201&per_page=100')).toBeUndefined();
  });
});

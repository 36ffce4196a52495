/**
 * The forge the listing benchmarks talk to: a few GitLab `/api/v4` endpoints serving records rendered once, at start,
 * so that a request costs the server a lookup and a write (well under a millisecond), and what a benchmark measures
 * is the client. Latency is added per request (a timer before the answer), as a forge farther away would.
 *
 * It runs in a process of its own (`fork` this file; it reports `{ready, url}` and answers `latency`, `stats`, `reset`
 * messages over IPC), so its work never shares the event loop of the client being measured.
 *
 * Served, GET only, any token in PRIVATE-TOKEN or JOB-TOKEN:
 * - `projects/1/jobs` (also `acme%2Fapi`): `jobs` failed jobs, newest first, paginated like GitLab;
 * - `projects/<other id>/jobs`: one page of `pollPageJobs` failed jobs (the job_retry poll's projects): a few recent
 *   `lint` jobs, then jobs that finished three days ago;
 * - `projects/:id/jobs/:job/trace`: a `traceBytes` log;
 * - `projects/:id/registry/repositories`, `.../repositories/7/tags` (`tags` tags, paginated), `.../tags/:name`;
 * - `user`.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FixtureOptions {
  /** Jobs of project 1. */
  jobs: number;
  /** Jobs on the single page every other project answers. */
  pollPageJobs: number;
  /** Of those, how many finished minutes ago (the rest three days ago). */
  pollRecentJobs: number;
  /** Tags of registry repository 7 of project 1. */
  tags: number;
  /** Size of the job log served by the trace endpoint. */
  traceBytes: number;
  /** "Now" of the rendered records, ms. */
  now: number;
}

export const DEFAULT_FIXTURE: FixtureOptions = {
  jobs: 10_000,
  pollPageJobs: 20,
  pollRecentJobs: 5,
  tags: 10_000,
  traceBytes: 52_500_000,
  now: Date.now(),
};

export const REPOSITORY_ID = 7;
export const TRACE_LAST_LINE = 'ERROR: Job failed: connection reset\n';

export interface FixtureStats {
  requests: number;
  /** Requests by route (`jobs`, `poll_jobs`, `tags`, `tag`, `trace`, ...). */
  byRoute: Record<string, number>;
  /** Distinct projects whose jobs were listed, other than project 1. */
  pollProjects: number;
  /** Most listing requests one of those projects received. */
  maxRequestsPerPollProject: number;
  /** Server CPU time (user + system) since the last reset, µs. */
  cpuMicros: number;
  latencyMs: number;
}

/** What a page of a paginated listing needs besides its body: rendered once. */
interface Page {
  body: Buffer;
  page: number;
}

interface Listing {
  total: number;
  perPage: number;
  pages: Page[];
  /** Renders a page for another `per_page`, cached: only the 100-per-page pages are built at start. */
  render: (perPage: number, page: number) => Buffer;
  cache: Map<string, Buffer>;
}

const iso = (ms: number) => new Date(ms).toISOString();

/** A failed job as GitLab renders it in a listing (about 2 KB), with the fields policies read and the usual rest. */
export function renderJob(id: number, projectId: number, finishedMs: number, name: string): Record<string, unknown> {
  const pipelineId = 100_000 + Math.floor(id / 4);
  const sha = (id * 2_654_435_761).toString(16).padStart(8, '0').repeat(5).slice(0, 40);
  const created = finishedMs - 600_000;
  return {
    id,
    status: 'failed',
    stage: name === 'lint' ? 'lint' : 'test',
    name,
    ref: 'main',
    tag: false,
    coverage: null,
    allow_failure: false,
    created_at: iso(created),
    started_at: iso(created + 30_000),
    finished_at: iso(finishedMs),
    erased_at: null,
    duration: 570.123456,
    queued_duration: 0.812345,
    user: {
      id: 42,
      username: 'mia',
      name: 'Mia Maintainer',
      state: 'active',
      locked: false,
      avatar_url: 'https://secure.gravatar.com/avatar/7a7f0d7e6c5d4b3a291807f6e5d4c3b2?s=80&d=identicon',
      web_url: 'https://gitlab.example.com/mia',
      created_at: '2021-03-04T10:11:12.000Z',
      bio: '',
      location: '',
      public_email: '',
      skype: '',
      linkedin: '',
      twitter: '',
      discord: '',
      website_url: '',
      organization: 'Acme',
      job_title: '',
      pronouns: null,
      bot: false,
      work_information: null,
      followers: 0,
      following: 0,
      local_time: null,
    },
    commit: {
      id: sha,
      short_id: sha.slice(0, 8),
      created_at: iso(created - 60_000),
      parent_ids: [sha.split('').reverse().join('')],
      title: `Merge branch 'feature-${id % 977}' into 'main'`,
      message: `Merge branch 'feature-${id % 977}' into 'main'\n\nFix the flaky connection handling\n\nSee merge request acme/api!${id % 5000}`,
      author_name: 'Mia Maintainer',
      author_email: 'mia@acme.example',
      authored_date: iso(created - 60_000),
      committer_name: 'Mia Maintainer',
      committer_email: 'mia@acme.example',
      committed_date: iso(created - 60_000),
      trailers: {},
      extended_trailers: {},
      web_url: `https://gitlab.example.com/acme/api/-/commit/${sha}`,
    },
    pipeline: {
      id: pipelineId,
      iid: pipelineId - 90_000,
      project_id: projectId,
      sha,
      ref: 'main',
      status: 'failed',
      source: 'push',
      created_at: iso(created - 30_000),
      updated_at: iso(finishedMs),
      web_url: `https://gitlab.example.com/acme/api/-/pipelines/${pipelineId}`,
    },
    web_url: `https://gitlab.example.com/acme/api/-/jobs/${id}`,
    project: { ci_job_token_scope_enabled: false },
    artifacts: [{ file_type: 'trace', size: 48_213, filename: 'job.log', file_format: null }],
    runner: {
      id: 7,
      description: 'shared-runner-7',
      ip_address: null,
      active: true,
      paused: false,
      is_shared: true,
      runner_type: 'instance_type',
      name: 'gitlab-runner',
      online: true,
      status: 'online',
    },
    runner_manager: null,
    artifacts_expire_at: iso(finishedMs + 30 * 86_400_000),
    archived: false,
    tag_list: ['docker', 'linux'],
    failure_reason: 'script_failure',
  };
}

function listing(items: readonly unknown[], perPage = 100): Listing {
  const pageCount = Math.max(1, Math.ceil(items.length / perPage));
  const render = (size: number, page: number) =>
    Buffer.from(JSON.stringify(items.slice((page - 1) * size, page * size)));
  const pages = Array.from({ length: pageCount }, (_, i) => ({ page: i + 1, body: render(perPage, i + 1) }));
  return { total: items.length, perPage, pages, render, cache: new Map() };
}

export interface Fixture {
  url: string;
  server: Server;
  setLatency(ms: number): void;
  stats(): FixtureStats;
  resetStats(): void;
  close(): Promise<void>;
}

/** Renders every record, then listens on 127.0.0.1 (`port` 0: any free port). */
export async function startFixtureServer(options: Partial<FixtureOptions> = {}, port = 0): Promise<Fixture> {
  const o = { ...DEFAULT_FIXTURE, ...options };
  const minute = 60_000;

  // Project 1: newest first, one job finishing every two minutes.
  const jobs = listing(
    Array.from({ length: o.jobs }, (_, i) =>
      renderJob(o.jobs - i, 1, o.now - (i + 1) * 2 * minute, i % 3 ? 'test-unit' : 'lint'),
    ),
  );
  // Every other project: a few recent `lint` failures (job_retry's cheap rules skip them), then old ones (the first
  // poll's `until` stops there). Project ids in these records are 0: the poll configures projects by id.
  const pollItems = Array.from({ length: o.pollPageJobs }, (_, i) => {
    const finished = i < o.pollRecentJobs ? o.now - (i + 1) * 5 * minute : o.now - 3 * 86_400_000 - i * minute;
    return renderJob(1_000_000 - i, 0, finished, i < o.pollRecentJobs ? 'lint' : 'test-unit');
  });
  const poll = listing(pollItems);

  const repositoryPath = 'acme/api/app';
  const tagNames = Array.from({ length: o.tags }, (_, i) => `build-${String(i).padStart(6, '0')}`); // sorted, as GitLab lists them
  const tagSummaries = tagNames.map((name) => ({
    name,
    path: `${repositoryPath}:${name}`,
    location: `registry.example.com/${repositoryPath}:${name}`,
  }));
  const tags = listing(tagSummaries);
  const tagDetails = new Map<string, Buffer>();
  tagNames.forEach((name, i) => {
    const digest = `sha256:${(i * 2_654_435_761).toString(16).padStart(8, '0').repeat(8)}`;
    tagDetails.set(
      name,
      Buffer.from(
        JSON.stringify({
          ...tagSummaries[i],
          revision: digest.slice(7),
          short_revision: digest.slice(7, 16),
          digest,
          // Oldest first, five minutes apart: the newest tags are hours old, the oldest about five weeks.
          created_at: iso(o.now - (o.tags - i) * 5 * minute),
          total_size: 48_000_000 + i,
        }),
      ),
    );
  });
  const repositories = listing([
    {
      id: REPOSITORY_ID,
      name: 'app',
      path: repositoryPath,
      project_id: 1,
      location: `registry.example.com/${repositoryPath}`,
      created_at: iso(o.now - 400 * 86_400_000),
      cleanup_policy_started_at: null,
      status: null,
      tags_count: o.tags,
    },
  ]);
  const user = Buffer.from(
    JSON.stringify({ id: 1, username: 'root', name: 'Administrator', state: 'active', is_admin: true }),
  );
  const line = 'line of build output\n';
  const trace = Buffer.from(line.repeat(Math.floor(o.traceBytes / line.length)) + TRACE_LAST_LINE);
  const notFound = Buffer.from('{"message":"404 Not found"}');
  const unauthorized = Buffer.from('{"message":"401 Unauthorized"}');

  let latencyMs = 0;
  let requests = 0;
  let byRoute: Record<string, number> = {};
  let pollCounts = new Map<string, number>();
  let cpuAtReset = process.cpuUsage();

  const json = (res: ServerResponse, status: number, body: Buffer, extra?: Record<string, string>) => {
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(body.length), ...extra });
    res.end(body);
  };

  /** GitLab's offset pagination headers; links keep the request's own query, with page and per_page replaced. */
  const paginated = (
    req: IncomingMessage,
    res: ServerResponse,
    path: string,
    query: URLSearchParams,
    list: Listing,
  ) => {
    const perPage = Math.min(Math.max(Number(query.get('per_page') ?? 20) || 20, 1), 100);
    const totalPages = Math.max(1, Math.ceil(list.total / perPage));
    const page = Math.max(Number(query.get('page') ?? 1) || 1, 1);
    let body: Buffer;
    if (perPage === list.perPage) body = list.pages[page - 1]?.body ?? Buffer.from('[]');
    else {
      const key = `${perPage}:${page}`;
      body = list.cache.get(key) ?? list.render(perPage, page);
      list.cache.set(key, body);
    }
    const base = `http://${req.headers.host ?? '127.0.0.1'}${path}`;
    const link = (p: number) => {
      query.set('page', String(p));
      query.set('per_page', String(perPage));
      return `<${base}?${query.toString()}>`;
    };
    const links: string[] = [];
    if (page > 1) links.push(`${link(page - 1)}; rel="prev"`);
    if (page < totalPages) links.push(`${link(page + 1)}; rel="next"`);
    links.push(`${link(1)}; rel="first"`, `${link(totalPages)}; rel="last"`);
    json(res, 200, body, {
      link: links.join(', '),
      'x-page': String(page),
      'x-per-page': String(perPage),
      'x-prev-page': page > 1 ? String(page - 1) : '',
      'x-next-page': page < totalPages ? String(page + 1) : '',
      'x-total': String(list.total),
      'x-total-pages': String(totalPages),
    });
  };

  const answer = (req: IncomingMessage, res: ServerResponse) => {
    const url = req.url ?? '/';
    const at = url.indexOf('?');
    const path = at === -1 ? url : url.slice(0, at);
    const query = new URLSearchParams(at === -1 ? '' : url.slice(at + 1));
    const count = (route: string) => (byRoute[route] = (byRoute[route] ?? 0) + 1);
    if (!req.headers['private-token'] && !req.headers['job-token']) return json(res, 401, unauthorized);
    const parts = path.split('/'); // ['', 'api', 'v4', ...]
    if (parts[1] !== 'api' || parts[2] !== 'v4' || req.method !== 'GET') return json(res, 404, notFound);
    if (parts.length === 4 && parts[3] === 'user') return (count('user'), json(res, 200, user));
    if (parts[3] !== 'projects' || parts.length < 6) return json(res, 404, notFound);
    const project = decodeURIComponent(parts[4]);
    const main = project === '1' || project === 'acme/api';
    if (parts[5] === 'jobs' && parts.length === 6) {
      if (main) return (count('jobs'), paginated(req, res, path, query, jobs));
      count('poll_jobs');
      pollCounts.set(project, (pollCounts.get(project) ?? 0) + 1);
      return paginated(req, res, path, query, poll);
    }
    if (parts[5] === 'jobs' && parts[7] === 'trace' && parts.length === 8) {
      count('trace');
      res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'content-length': String(trace.length) });
      return res.end(trace);
    }
    if (parts[5] === 'registry' && parts[6] === 'repositories' && main) {
      if (parts.length === 7) return (count('repositories'), paginated(req, res, path, query, repositories));
      if (Number(parts[7]) === REPOSITORY_ID && parts[8] === 'tags') {
        if (parts.length === 9) return (count('tags'), paginated(req, res, path, query, tags));
        const detail = parts.length === 10 ? tagDetails.get(decodeURIComponent(parts[9])) : undefined;
        count('tag');
        return detail ? json(res, 200, detail) : json(res, 404, notFound);
      }
    }
    return json(res, 404, notFound);
  };

  const server = createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
    requests++;
    // The request body (none for GET) is drained so the connection can be reused.
    req.resume();
    if (latencyMs > 0) setTimeout(answer, latencyMs, req, res);
    else answer(req, res);
  });
  server.headersTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const address = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${address.port}`,
    server,
    setLatency: (ms) => void (latencyMs = ms),
    stats: () => {
      const cpu = process.cpuUsage(cpuAtReset);
      return {
        requests,
        byRoute: { ...byRoute },
        pollProjects: pollCounts.size,
        maxRequestsPerPollProject: Math.max(0, ...pollCounts.values()),
        cpuMicros: cpu.user + cpu.system,
        latencyMs,
      };
    },
    resetStats: () => {
      requests = 0;
      byRoute = {};
      pollCounts = new Map();
      cpuAtReset = process.cpuUsage();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Messages the parent sends; each gets one reply `{id, ...}`. */
export type FixtureRequest =
  { id: number; type: 'latency'; ms: number } | { id: number; type: 'stats' } | { id: number; type: 'reset' };

if (require.main === module) {
  const options: Partial<FixtureOptions> = process.env.FIXTURE_OPTIONS
    ? (JSON.parse(process.env.FIXTURE_OPTIONS) as Partial<FixtureOptions>)
    : {};
  startFixtureServer(options).then(
    (fixture) => {
      process.on('message', (message: FixtureRequest) => {
        if (message.type === 'latency') fixture.setLatency(message.ms);
        if (message.type === 'reset') fixture.resetStats();
        process.send?.({ id: message.id, stats: fixture.stats() });
      });
      process.on('disconnect', () => void fixture.close().then(() => process.exit(0)));
      process.send?.({ ready: true, url: fixture.url });
    },
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}

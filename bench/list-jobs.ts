/**
 * Forgewarden's side of the fresh-process listing in `npm run bench`, like bench/python_list_jobs.py for
 * python-gitlab: load the client, list every job of a project, print one JSON line. The parent times the whole
 * process; this times the listing.
 *
 * Usage: node dist-bench/bench/list-jobs.js URL TOKEN PROJECT_ID
 */
import { performance } from 'node:perf_hooks';
import { GitlabClient } from '../src/gitlab';

async function main(): Promise<void> {
  const [url, token, projectId] = process.argv.slice(2);
  const client = new GitlabClient({ url, token, maxRequestsPerMinute: 0 });
  const started = performance.now();
  let count = 0;
  for await (const _job of client.jobs.all(Number(projectId))) count++;
  const listMs = performance.now() - started;
  await client.close();
  process.stdout.write(`${JSON.stringify({ list_ms: listMs, count })}\n`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});

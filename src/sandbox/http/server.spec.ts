import { request } from 'undici';
import { startSandbox, type RunningSandbox } from '../index';
import { apiClient, call } from '../../../test/support/sandbox-http';
import { baseWorld, USER_TOKEN } from '../../../test/support/world-builders';

/**
 * Faults over real HTTP that answer after the forge acted (`after: true`): the state changes although the client sees
 * a 502 or a cut connection, and the request log says what the forge did.
 */
describe('sandbox server: faults after the forge acted', () => {
  let sandbox: RunningSandbox;
  const alice = (): ReturnType<typeof apiClient> => apiClient(sandbox.url, USER_TOKEN);
  const control = (path: string, method = 'GET', body?: unknown): ReturnType<typeof call> =>
    call(sandbox.url, `/__sandbox${path}`, { method, body });
  const faultsLogged = async (): Promise<[string, number, string | null][]> =>
    ((await control('/requests')).json as { method: string; status: number; fault: string | null }[]).map((e) => [
      e.method,
      e.status,
      e.fault,
    ]);

  beforeEach(async () => {
    sandbox = await startSandbox({
      world: baseWorld({
        projects: [
          {
            id: 1,
            path: 'api',
            namespace: 'acme',
            pipelines: [{ id: 7, jobs: [{ id: 5, name: 'test', status: 'failed', log: 'connection reset\n' }] }],
          },
        ],
      }),
    });
  });

  afterEach(() => sandbox.close());

  const attemptsOfTest = (): number => [...sandbox.state.jobs.values()].filter((j) => j.name === 'test').length;

  it('retries the job, then answers 502 as a proxy that lost the answer would', async () => {
    await control('/faults', 'POST', { method: 'POST', path: '/retry$', status: 502, after: true, times: 1 });
    const answer = await alice()('/projects/1/jobs/5/retry', { method: 'POST' });
    expect(answer.status).toBe(502);
    expect(answer.text).toBe('502 Bad Gateway\n');
    expect(sandbox.state.jobs.get(5)?.retried).toBe(true);
    expect(attemptsOfTest()).toBe(2);
    expect(await faultsLogged()).toEqual([['POST', 502, 'status 502 after 200']]);
  });

  it('retries the job, then cuts the connection without an answer', async () => {
    await control('/faults', 'POST', { method: 'POST', sequence: [{ reset: true, after: true }] });
    await expect(
      request(`${sandbox.url}/api/v4/projects/1/jobs/5/retry`, { method: 'POST', headers: { 'PRIVATE-TOKEN': USER_TOKEN } }),
    ).rejects.toThrow();
    expect(attemptsOfTest()).toBe(2);
    expect(await faultsLogged()).toEqual([['POST', 0, 'reset after 200']]);
  });

  it('logs the forge’s own refusal behind the fault', async () => {
    await control('/faults', 'POST', { method: 'POST', status: 504, after: true });
    expect((await alice()('/projects/1/jobs/999/retry', { method: 'POST' })).status).toBe(504);
    expect(attemptsOfTest()).toBe(1);
    expect(await faultsLogged()).toEqual([['POST', 504, 'status 504 after 404']]);
  });

  it('still answers before acting without `after`', async () => {
    await control('/faults', 'POST', { method: 'POST', status: 502, times: 1 });
    expect((await alice()('/projects/1/jobs/5/retry', { method: 'POST' })).status).toBe(502);
    expect(sandbox.state.jobs.get(5)?.retried).toBe(false);
    expect(attemptsOfTest()).toBe(1);
    expect(await faultsLogged()).toEqual([['POST', 502, 'status 502']]);
  });
});

import { SKIP } from '../../engine/policy';
import {
  aCandidate,
  aConfig,
  aFailedJob,
  aProjectSnapshot,
  aSnapshot,
  aSnapshotOf,
  type CandidateFields,
} from '../../../test/support/builders/jobs';
import { cheapSkipReason, decideJobRetries, historySkipReason, needsLog, RETRY } from './job-retry.decide';

const NOW = new Date('2025-06-02T12:00:00.000Z');

/** The one decision for a single candidate of acme/api. */
function decideOne(config: Record<string, unknown>, candidate: CandidateFields) {
  const decisions = decideJobRetries(aConfig(config), aSnapshot(aCandidate(candidate)), NOW);
  expect(decisions).toHaveLength(1);
  return decisions[0];
}

const LOGS = { failure_log: ['(?i)connection reset', 'ETIMEDOUT'] };

describe('job_retry decide: each rule and its reason', () => {
  it.each<[string, Record<string, unknown>, CandidateFields, string, string]>([
    // rule 1: allowed to fail
    ['a job allowed to fail is left alone', {}, { allow_failure: true }, SKIP, 'skip: allowed to fail'],
    [
      'match.allow_failure: true takes it',
      { match: { allow_failure: true } },
      { allow_failure: true },
      RETRY,
      'retry 1 of 2: failed in stage test',
    ],
    // rule 2: job names
    [
      'a job name no expression matches',
      { match: { job_names: ['^test'] } },
      { name: 'e2e-slow' },
      SKIP,
      'skip: job name "e2e-slow" not matched',
    ],
    [
      'a job name matched anywhere (unanchored)',
      { match: { job_names: ['unit'] } },
      { name: 'test-unit' },
      RETRY,
      'retry 1 of 2: failed in stage test',
    ],
    [
      'any of several job name expressions',
      { match: { job_names: ['^e2e', '^test'] } },
      { name: 'test-unit' },
      RETRY,
      'retry 1 of 2: failed in stage test',
    ],
    // rule 3: stages
    [
      'a stage no expression matches',
      { match: { stages: ['^test$'] } },
      { stage: 'deploy' },
      SKIP,
      'skip: stage deploy not matched',
    ],
    [
      'a matched stage',
      { match: { stages: ['^test$'] } },
      { stage: 'test' },
      RETRY,
      'retry 1 of 2: failed in stage test',
    ],
    // rule 4: refs
    [
      'a ref no expression matches',
      { match: { refs: ['^main$'] } },
      { ref: 'feature/x' },
      SKIP,
      'skip: ref feature/x not matched',
    ],
    [
      'a matched ref',
      { match: { refs: ['^main$', '^release/'] } },
      { ref: 'release/1.2' },
      RETRY,
      'retry 1 of 2: failed in stage test',
    ],
    // rule 5: tag or branch pipelines
    [
      'tag: false leaves tag pipelines',
      { match: { tag: false } },
      { tag: true, ref: 'v1.0.0' },
      SKIP,
      'skip: tag pipeline not matched',
    ],
    [
      'tag: true leaves branch pipelines',
      { match: { tag: true } },
      { tag: false },
      SKIP,
      'skip: branch pipeline not matched',
    ],
    [
      'tag: true takes tag pipelines',
      { match: { tag: true } },
      { tag: true },
      RETRY,
      'retry 1 of 2: failed in stage test',
    ],
    [
      'tag: false takes branch pipelines',
      { match: { tag: false } },
      { tag: false },
      RETRY,
      'retry 1 of 2: failed in stage test',
    ],
    ['no tag condition takes tag pipelines', {}, { tag: true }, RETRY, 'retry 1 of 2: failed in stage test'],
    // rule 6: a newer attempt
    [
      'a newer attempt of the same name exists',
      {},
      { id: 812, attempts: 2, newestAttemptId: 915 },
      SKIP,
      'skip: newer attempt 915 exists',
    ],
    ['the pipeline is gone (its jobs could not be read)', {}, { attempts: undefined }, SKIP, 'skip: pipeline is gone'],
    // rule 7: retries used up
    ['retries used up', {}, { attempts: 3 }, SKIP, 'skip: already retried 2 times'],
    ['one retry used up of max_retries 1', { max_retries: 1 }, { attempts: 2 }, SKIP, 'skip: already retried 1 time'],
    [
      'more attempts than max_retries allows (retried by people)',
      { max_retries: 1 },
      { attempts: 5 },
      SKIP,
      'skip: already retried 4 times',
    ],
    ['the last retry left', {}, { attempts: 2 }, RETRY, 'retry 2 of 2: failed in stage test'],
    ['max_retries 10', { max_retries: 10 }, { attempts: 10 }, RETRY, 'retry 10 of 10: failed in stage test'],
    // rule 8: the log
    ['the log is gone', { match: LOGS }, { log: null }, SKIP, 'skip: log is gone (erased or expired)'],
    [
      'no expression matches the log',
      { match: LOGS },
      { log: 'error: assertion failed\n' },
      SKIP,
      'skip: log did not match',
    ],
    ['a log nobody read is never retried on', { match: LOGS }, { log: undefined }, SKIP, 'skip: log not read'],
    [
      'the log matches',
      { match: LOGS },
      { log: 'curl: Connection Reset by peer\n' },
      RETRY,
      'retry 1 of 2: log matched "(?i)connection reset"',
    ],
    [
      'the second expression matches',
      { match: LOGS },
      { attempts: 2, log: 'connect ETIMEDOUT 10.0.0.1:443\n' },
      RETRY,
      'retry 2 of 2: log matched "ETIMEDOUT"',
    ],
    [
      'the first expression in the file wins',
      { match: LOGS },
      { log: 'ETIMEDOUT then connection reset\n' },
      RETRY,
      'retry 1 of 2: log matched "(?i)connection reset"',
    ],
    ['without failure_log the log is not looked at', {}, { log: null }, RETRY, 'retry 1 of 2: failed in stage test'],
    // rule 9 without failure_log names the stage
    ['the reason names the stage', {}, { stage: 'integration' }, RETRY, 'retry 1 of 2: failed in stage integration'],
  ])('%s', (_title, config, candidate, action, reason) => {
    expect(decideOne(config, candidate)).toMatchObject({ action, reason });
  });
});

describe('job_retry decide: the order of the rules', () => {
  const everything = {
    match: {
      job_names: ['^test'],
      stages: ['^test$'],
      refs: ['^main$'],
      tag: false,
      failure_log: ['connection reset'],
    },
    max_retries: 1,
  };
  it.each<[string, CandidateFields, string]>([
    ['allowed to fail before the name', { allow_failure: true, name: 'e2e-slow' }, 'skip: allowed to fail'],
    ['the name before the stage', { name: 'e2e-slow', stage: 'deploy' }, 'skip: job name "e2e-slow" not matched'],
    ['the stage before the ref', { stage: 'deploy', ref: 'feature/x' }, 'skip: stage deploy not matched'],
    ['the ref before the tag', { ref: 'feature/x', tag: true }, 'skip: ref feature/x not matched'],
    [
      'the tag before a newer attempt',
      { tag: true, attempts: 2, newestAttemptId: 915 },
      'skip: tag pipeline not matched',
    ],
    ['a newer attempt before retries used up', { attempts: 3, newestAttemptId: 915 }, 'skip: newer attempt 915 exists'],
    ['retries used up before the log', { attempts: 2, log: null }, 'skip: already retried 1 time'],
    [
      'retries used up even when the log matches',
      { attempts: 2, log: 'connection reset\n' },
      'skip: already retried 1 time',
    ],
    [
      'a cheap rule even when the log matches',
      { name: 'lint', log: 'connection reset\n' },
      'skip: job name "lint" not matched',
    ],
  ])('%s', (_title, candidate, reason) => {
    expect(decideOne(everything, candidate)).toMatchObject({ action: SKIP, reason });
  });

  it('retries when every condition holds', () => {
    expect(decideOne(everything, { log: '... connection reset by peer\n' })).toMatchObject({
      action: RETRY,
      reason: 'retry 1 of 1: log matched "connection reset"',
    });
  });
});

describe('job_retry decide: the decision fields', () => {
  it('names the target, keys the failure by project and job id, and carries the ids as params', () => {
    expect(decideOne({}, { id: 812, name: 'test-unit' })).toEqual({
      action: RETRY,
      target: 'acme/api job 812 (test-unit)',
      key: '1:812',
      reason: 'retry 1 of 2: failed in stage test',
      params: { project: 1, job_id: 812, pipeline_id: 100, job_name: 'test-unit', source: 'acme/api' },
    });
  });

  it('gives a skip the same target, key and params', () => {
    expect(decideOne({}, { id: 812, allow_failure: true })).toEqual({
      action: SKIP,
      target: 'acme/api job 812 (test-unit)',
      key: '1:812',
      reason: 'skip: allowed to fail',
      params: { project: 1, job_id: 812, pipeline_id: 100, job_name: 'test-unit', source: 'acme/api' },
    });
  });

  it('uses the numeric project id in the key and params, and the project as configured in the target', () => {
    const config = aConfig({ projects: [42] });
    const snapshot = aSnapshotOf(
      aProjectSnapshot([aCandidate({ id: 7, project_id: 42 })], { project: 42, projectId: 42 }),
    );
    expect(decideJobRetries(config, snapshot, NOW)[0]).toMatchObject({
      target: '42 job 7 (test-unit)',
      key: '42:7',
      params: { project: 42, job_id: 7, pipeline_id: 100, job_name: 'test-unit', source: '42' },
    });
  });

  it('keys the same failure the same way in every pass, whatever else changed', () => {
    const first = decideOne({}, { id: 812, attempts: 1 });
    const later = decideOne(
      { max_retries: 3, delay: '1m' },
      { id: 812, attempts: 2, finished_at: '2025-06-02T11:59:00.000Z' },
    );
    expect(later.key).toBe(first.key);
  });

  it('falls back to the job’s project id when the snapshot has none for its project', () => {
    const snapshot = aSnapshotOf(aProjectSnapshot([aCandidate({ project_id: 9 })], { projectId: undefined }));
    expect(decideJobRetries(aConfig(), snapshot, NOW)[0]).toMatchObject({
      key: '9:812',
      params: { project: 9, job_id: 812, pipeline_id: 100, job_name: 'test-unit' },
    });
  });

  it('delays retries by `delay`; a skip has no delay', () => {
    const config = { delay: '30s', match: { job_names: ['^test'] } };
    expect(decideOne(config, {})).toMatchObject({ action: RETRY, delayMs: 30_000 });
    expect(decideOne(config, { name: 'lint' })).not.toHaveProperty('delayMs');
  });

  it('has no delay by default', () => {
    expect(decideOne({}, {})).not.toHaveProperty('delayMs');
    expect(decideOne({ delay: '0s' }, {})).not.toHaveProperty('delayMs');
  });
});

describe('job_retry decide: determinism', () => {
  const config = aConfig({ projects: ['acme/api', 'acme/web'] });
  const api = aProjectSnapshot([
    aCandidate({ id: 5 }),
    aCandidate({ id: 812 }),
    aCandidate({ id: 40, allow_failure: true }),
  ]);
  const web = aProjectSnapshot([aCandidate({ id: 900, project_id: 2 }), aCandidate({ id: 3, project_id: 2 })], {
    project: 'acme/web',
    projectId: 2,
  });

  it('orders by project as configured, then newest job first', () => {
    const keys = decideJobRetries(config, aSnapshotOf(web, api), NOW).map((d) => d.key);
    expect(keys).toEqual(['1:812', '1:40', '1:5', '2:900', '2:3']);
  });

  it('gives the same decisions for the same input, whatever order the snapshot lists things in', () => {
    const reversed = aSnapshotOf(
      { ...web, candidates: [...web.candidates].reverse() },
      { ...api, candidates: [...api.candidates].reverse() },
    );
    expect(decideJobRetries(config, reversed, NOW)).toEqual(decideJobRetries(config, aSnapshotOf(api, web), NOW));
  });

  it('does not read the clock: another `now` decides the same', () => {
    const snapshot = aSnapshotOf(api, web);
    expect(decideJobRetries(config, snapshot, new Date('2030-01-01T00:00:00Z'))).toEqual(
      decideJobRetries(config, snapshot, NOW),
    );
  });

  it('decides nothing for a snapshot without candidates', () => {
    expect(decideJobRetries(config, aSnapshotOf(aProjectSnapshot([])), NOW)).toEqual([]);
  });
});

describe('job_retry decide: the predicates the observer reuses', () => {
  it('cheapSkipReason passes a job that meets the cheap rules, whatever its history or log', () => {
    const config = aConfig({ match: { job_names: ['^test'] } });
    expect(cheapSkipReason(config, aFailedJob({ name: 'test-unit' }))).toBeUndefined();
    expect(cheapSkipReason(config, aFailedJob({ name: 'lint' }))).toBe('skip: job name "lint" not matched');
  });

  it('historySkipReason passes only the newest attempt with retries left', () => {
    const config = aConfig();
    expect(historySkipReason(config, { job: aFailedJob(), attempts: 2, newestAttemptId: 812 })).toBeUndefined();
    expect(historySkipReason(config, { job: aFailedJob(), attempts: 2, newestAttemptId: 900 })).toBe(
      'skip: newer attempt 900 exists',
    );
    expect(historySkipReason(config, { job: aFailedJob(), attempts: 3, newestAttemptId: 812 })).toBe(
      'skip: already retried 2 times',
    );
  });

  it('needsLog only with failure_log', () => {
    expect(needsLog(aConfig())).toBe(false);
    expect(needsLog(aConfig({ match: { failure_log: ['x'] } }))).toBe(true);
  });
});

import type { PolicyMeasure } from '../../engine/policy';

/**
 * 1 while the policy is in a retry storm (retries of one failure signature held, one probe job at a time), 0 otherwise:
 * cluster-wide, so the alert and every replica's console see one truth.
 */
export const RETRY_STORM: PolicyMeasure = {
  name: 'retry_storm',
  help: '1 while the job_retry policy is in a retry storm: failures with one signature are held instead of retried, and one probe job is retried at a time (read from Redis).',
  kind: 'gauge',
  labels: [],
  clusterWide: true,
  notice: () => 'in a retry storm: failed jobs are held, not retried, while one probe job at a time is',
};

export const JOB_RETRY_MEASURES: readonly PolicyMeasure[] = [RETRY_STORM];

import { redisKeyPrefix } from './connection';
import { requiredReplicaAcks } from './replication';

describe('how many replicas a claim waits for', () => {
  it("takes the file's number, else 1 behind sentinels or where the primary has a replica, else 0", () => {
    expect(requiredReplicaAcks({ min_replicas_acked: 2 }, 0)).toBe(2);
    expect(requiredReplicaAcks({ min_replicas_acked: 0, sentinels: ['a:26379'] }, 3)).toBe(0);
    expect(requiredReplicaAcks({ sentinels: ['a:26379'] }, 0)).toBe(1);
    expect(requiredReplicaAcks({}, 2)).toBe(1);
    expect(requiredReplicaAcks({}, 0)).toBe(0);
  });
});

describe('the prefix of every key', () => {
  it('is the hash tag {prefix} in a Cluster, so all keys share one slot, and the prefix itself otherwise', () => {
    expect(redisKeyPrefix({ prefix: 'forgewarden', cluster: ['a:7000'] })).toBe('{forgewarden}');
    expect(redisKeyPrefix({ prefix: 'forgewarden' })).toBe('forgewarden');
  });
});

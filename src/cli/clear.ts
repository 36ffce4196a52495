import { PrefixKeys } from '../engine/stores/prefix-keys';
import { ReplicaPresence, RUNNING_IF_SEEN_MS } from '../engine/stores/replicas';
import { count } from '../engine/words';
import { type AppCommandOptions, withApp } from './with-app';

/**
 * `forgewarden clear`: removes every key under the file's `redis.prefix` (records, schedules, queues, audit trail), as
 * after a tour of the sandbox. Dry run unless `--no-dry-run` or `dry_run: false`, like every command that removes
 * something; refused while a daemon runs on those keys. Reads and writes Redis only: no forge, no token.
 */
export async function clearCommand(options: AppCommandOptions): Promise<number> {
  return withApp(
    'clear',
    options,
    async (app, config) => {
      const keys = app.get(PrefixKeys);
      const now = Date.now();
      const running = await app.get(ReplicaPresence).seenSince(now - RUNNING_IF_SEEN_MS, now);
      if (running.length > 0) {
        const seen = running
          .map((replica) => `${replica.name} (seen ${Math.round((now - replica.seenMs) / 1000)}s ago)`)
          .join(', ');
        process.stderr.write(
          `forgewarden clear: a daemon uses the keys under ${keys.prefix}: ${seen}; stop it first (a daemon killed outright counts for a minute)\n`,
        );
        return 1;
      }
      if (config.dry_run) {
        const found = await keys.count();
        process.stdout.write(
          `would remove ${count(found, 'key')} under ${keys.prefix} (dry run: --no-dry-run removes them)\n`,
        );
        return 0;
      }
      process.stdout.write(`removed ${count(await keys.removeAll(), 'key')} under ${keys.prefix}\n`);
      return 0;
    },
    'none',
  );
}

import { parseDuration } from '../config/duration';
import { AuditTrail } from '../engine/stores/audit';
import { renderTable } from './table';
import { withApp } from './with-app';

/** Recent actions and would-be actions from the audit trail, oldest first. Reads Redis only: no forge, no token. */
export async function auditCommand(options: { config?: string; since: string; json?: boolean }): Promise<number> {
  const sinceMs = parseDuration(options.since);
  if (sinceMs === undefined) {
    process.stderr.write(
      `forgewarden audit: --since expects a duration such as 30m, 24h or 7d (got "${options.since}")\n`,
    );
    return 2;
  }
  return withApp(
    'audit',
    options,
    async (app) => {
      const entries = await app.get(AuditTrail).read(Date.now() - sinceMs);
      if (options.json) {
        process.stdout.write(`${JSON.stringify(entries, null, 2)}\n`);
      } else if (entries.length === 0) {
        process.stdout.write(`no actions in the last ${options.since}\n`);
      } else {
        const rows = entries.map((entry) => [
          entry.time,
          entry.policy,
          entry.dry_run ? `${entry.outcome} (dry run)` : entry.outcome,
          entry.action,
          entry.target,
          entry.reason,
          entry.detail ?? '',
        ]);
        process.stdout.write(
          `${renderTable(['TIME', 'POLICY', 'OUTCOME', 'ACTION', 'TARGET', 'REASON', 'DETAIL'], rows)}\n`,
        );
      }
      return 0;
    },
    'none',
  );
}

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { call } from './sandbox-http';

/**
 * What the group_backup tests share: the policy as YAML lines of a `policies:` list, and a backup folder of each
 * test's own on a sandbox whose export limits and delay are shortened to test speed (a second, not the forge's minute).
 */

/** The `nightly` policy backing up acme (unless `fields` names other groups) at 02:00 into `destination`, its download tried every second. */
export function nightlyBackupPolicy(destination: string, fields: readonly string[] = []): string[] {
  return [
    '  - name: nightly',
    '    type: group_backup',
    ...(fields.some((field) => field.startsWith('groups:')) ? [] : ['    groups: [acme]']),
    '    schedule: "0 2 * * *"',
    `    destination: ${JSON.stringify(destination)}`,
    '    download_interval: 1s',
    ...fields.map((field) => `    ${field}`),
  ];
}

/** Export limits of a second and an export ready in 20 ms: a test's backups take seconds. */
export async function speedUpExports(sandboxUrl: string, settings: Record<string, unknown> = {}): Promise<void> {
  const answer = await call(sandboxUrl, '/__sandbox/settings', {
    method: 'POST',
    body: { export_rate_limits: { window_ms: 1000 }, export_delay_ms: 20, ...settings },
  });
  if (answer.status !== 200) throw new Error(`the sandbox refused the export settings: ${answer.status}`);
}

/** A fresh backup folder for each test (and faster exports on its sandbox), removed after it; read it with the getter. */
export function useBackupFolder(sandboxUrl: () => string): () => string {
  let destination: string | undefined;
  beforeEach(async () => {
    destination = mkdtempSync(join(tmpdir(), 'forgewarden-backups-'));
    await speedUpExports(sandboxUrl());
  });
  afterEach(() => {
    if (destination) rmSync(destination, { recursive: true, force: true });
  });
  return () => {
    if (!destination) throw new Error('the backup folder exists only inside a test');
    return destination;
  };
}

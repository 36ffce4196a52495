import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { HOOK_AGENT } from './judges';

/**
 * The humans scenario's on_rotate: a small Node script the daemon runs (through `/bin/sh`) once a new key is in place.
 * It appends what it was handed to `on-rotate.jsonl` and reports it to the forge (a request the watcher sees while the
 * daemon still waits for the hook), so the judge compares it with what the forge holds at that very moment. Its
 * request is tried again after a fault, and its nonce lets the judge count a report that arrived twice once.
 */
export function writeOnRotateHook(dir: string): { command: string; log: string } {
  const script = join(dir, 'on-rotate-hook.js');
  const log = join(dir, 'on-rotate.jsonl');
  writeFileSync(
    script,
    `'use strict';
const { appendFileSync } = require('node:fs');
const { randomUUID } = require('node:crypto');
const env = process.env;
const report = {
  nonce: randomUUID(),
  at: new Date().toISOString(),
  title: env.FORGEWARDEN_KEY_TITLE,
  keyId: env.FORGEWARDEN_KEY_ID,
  fingerprint: env.FORGEWARDEN_KEY_FINGERPRINT,
  oldKeyId: env.FORGEWARDEN_OLD_KEY_ID,
};
appendFileSync(${JSON.stringify(log)}, JSON.stringify(report) + '\\n');
const url = String(env.GITLAB_URL || '').replace(/\\/+$/, '') + '/api/v4/chaos/on-rotate';
(async () => {
  for (let attempt = 0; attempt < 30; attempt++) {
    try {
      const response = await fetch(url, { method: 'POST', headers: { 'user-agent': ${JSON.stringify(HOOK_AGENT)}, 'content-type': 'application/json' }, body: JSON.stringify(report) });
      await response.arrayBuffer();
      if (![429, 500, 502, 503, 504].includes(response.status)) return;
    } catch {}
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
})();
`,
  );
  return { command: `node ${JSON.stringify(script)}`, log };
}

import { type Html, html } from '../html';

/** A moment as people read it on the console: UTC to the second, and how long ago or ahead. */
export function when(moment: Date | string | undefined, now: Date): Html {
  if (moment === undefined || moment === '') return html`<span class="muted">never</span>`;
  const date = typeof moment === 'string' ? new Date(moment) : moment;
  if (Number.isNaN(date.getTime())) return html`${String(moment)}`;
  const iso = date.toISOString();
  return html`<time datetime="${iso}" title="${iso}">${iso.slice(0, 19).replace('T', ' ')}Z</time> <span class="muted">(${relative(date.getTime() - now.getTime())})</span>`;
}

/** `in 4m`, `2h ago`, `now`. */
export function relative(deltaMs: number): string {
  const seconds = Math.round(Math.abs(deltaMs) / 1000);
  if (seconds < 2) return 'now';
  const text =
    seconds < 120
      ? `${seconds}s`
      : seconds < 7_200
        ? `${Math.round(seconds / 60)}m`
        : seconds < 172_800
          ? `${Math.round(seconds / 3_600)}h`
          : `${Math.round(seconds / 86_400)}d`;
  return deltaMs < 0 ? `${text} ago` : `in ${text}`;
}

/** `840 ms`, `12.4 s`, `3m 05s`. */
export function took(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const seconds = Math.round(ms / 1000);
  return `${Math.floor(seconds / 60)}m ${String(seconds % 60).padStart(2, '0')}s`;
}

/** Outcomes in the order people look for them: what went wrong first, skips last. */
const OUTCOME_ORDER = [
  'failed',
  'refused',
  'uncertain',
  'paused',
  'stale',
  'deferred',
  'rate_limited',
  'in_progress',
  'scheduled',
  'done',
  'would_act',
  'gone',
  'duplicate',
  'skipped',
];

/** `2 done · 1 failed · 14 skipped`, each outcome marked for its colour. */
export function outcomeCounts(outcomes: Readonly<Record<string, number>>): Html {
  const names = Object.keys(outcomes).sort((a, b) => rank(a) - rank(b));
  if (names.length === 0) return html`<span class="muted">nothing decided</span>`;
  return html`${names.map((name, index) => html`${index > 0 ? ' · ' : ''}<span class="outcome ${name}">${outcomes[name]} ${name.replace('_', ' ')}</span>`)}`;
}

function rank(outcome: string): number {
  const index = OUTCOME_ORDER.indexOf(outcome);
  return index === -1 ? OUTCOME_ORDER.length : index;
}

/** An outcome as a badge. */
export function outcome(name: string, dryRun = false): Html {
  return html`<span class="outcome ${name}">${name.replace('_', ' ')}</span>${dryRun ? html` <span class="muted">(dry run)</span>` : ''}`;
}

/** A pass's result as a badge. */
export function result(name: string): Html {
  return html`<span class="result ${name}">${name}</span>`;
}

import type { AuditFilter, AuditPage, StoredAuditEntry } from '../../engine/stores/audit';
import { type Html, html } from '../html';
import { outcome, when } from './format';
import { layout, type PageFrame } from './layout';

/** The outcomes and actions the filter offers (any other can still be typed into the URL). */
const OUTCOMES = [
  'done',
  'would_act',
  'failed',
  'refused',
  'stale',
  'gone',
  'deferred',
  'rate_limited',
  'scheduled',
  'uncertain',
  'unobserved',
];

/** The audit filter as the page's form and links carry it. */
export interface AuditQuery extends AuditFilter {
  /** As typed, for the form: `2026-11-27T18:00`. */
  readonly from?: string;
  readonly to?: string;
}

/** `/audit`: the filter, a page of entries newest first, and the way to older ones. */
export function auditPage(
  query: AuditQuery,
  page: AuditPage,
  policies: readonly string[],
  frame: PageFrame,
  problem?: string,
): Html {
  const now = frame.now;
  const older = page.before ? `/audit?${queryString(query, { before: page.before })}` : undefined;
  const body = html`
<h1>Audit trail</h1>
<form class="filters" method="get" action="/audit">
  <label>Policy <select name="policy"><option value="">any</option>${policies.map((name) => html`<option${name === query.policy ? html` selected` : ''}>${name}</option>`)}</select></label>
  <label>Outcome <select name="outcome"><option value="">any</option>${OUTCOMES.map((name) => html`<option${name === query.outcome ? html` selected` : ''}>${name}</option>`)}</select></label>
  <label>Action <input name="action" value="${query.action ?? ''}" size="14" placeholder="retry, delete_tags…"></label>
  <label>Target contains <input name="q" value="${query.text ?? ''}" size="22"></label>
  <label>From (UTC) <input name="from" value="${query.from ?? ''}" size="18" placeholder="2026-11-27T08:00"></label>
  <label>To (UTC) <input name="to" value="${query.to ?? ''}" size="18" placeholder="2026-11-27T18:00"></label>
  <button type="submit">Filter</button> <a href="/audit">Clear</a>
</form>
${problem ? html`<p class="error">${problem}</p>` : ''}
${page.stoppedAt ? html`<p class="notice" id="scan-stopped">Searched ${page.scanned} entries, back to ${when(idTime(page.stoppedAt), now)}, and stopped there to answer quickly. <a href="${older}">Search older entries</a>, or narrow the time range.</p>` : ''}
${page.entries.length === 0 ? html`<p class="muted">No entry matches${page.stoppedAt ? ' among those searched' : ''}.</p>` : auditRows(page.entries, now)}
<div class="pager">
  ${older && !page.stoppedAt ? html`<a id="older" href="${older}">Older entries →</a>` : ''}
  <a href="/audit.ndjson?${queryString(query, {})}">This filter as NDJSON</a>
</div>`;
  return layout('Audit trail', frame, body);
}

/** The entries as a table, each linked to its own page. */
export function auditRows(entries: readonly StoredAuditEntry[], now: Date): Html {
  return html`<table class="audit"><thead><tr><th>Time</th><th>Policy</th><th>Outcome</th><th>Action</th><th>Target</th><th>Reason</th><th>Detail</th></tr></thead><tbody>
${entries.map(
  (
    entry,
  ) => html`<tr data-id="${entry.id}"><td><a href="/audit/${entry.id}">${when(entry.time, now)}</a></td><td><a href="/policies/${entry.policy}">${entry.policy}</a></td><td>${outcome(entry.outcome, entry.dry_run)}</td><td>${entry.action}</td>
<td class="wrap target">${entry.target}</td><td class="wrap">${entry.reason}</td><td class="wrap">${entry.detail ?? ''}</td></tr>`,
)}
</tbody></table>`;
}

/** `/audit/<id>`: one entry, whole. */
export function auditEntryPage(entry: StoredAuditEntry, frame: PageFrame): Html {
  return layout(
    'Audit entry',
    frame,
    html`
<h1>Audit entry <span class="muted">${entry.id}</span></h1>
<dl>
<dt>Time</dt><dd>${when(entry.time, frame.now)}</dd>
<dt>Policy</dt><dd><a href="/policies/${entry.policy}">${entry.policy}</a></dd>
<dt>Outcome</dt><dd>${outcome(entry.outcome, entry.dry_run)}</dd>
<dt>Action</dt><dd>${entry.action}</dd>
<dt>Target</dt><dd>${entry.target}</dd>
<dt>Reason</dt><dd>${entry.reason}</dd>
<dt>Detail</dt><dd>${entry.detail ?? ''}</dd>
</dl>
<p><a href="/audit?policy=${entry.policy}">More of ${entry.policy}</a></p>`,
  );
}

/** The query of a filter, to link to another page of it. */
export function queryString(query: AuditQuery, extra: { before?: string }): string {
  const params = new URLSearchParams();
  if (query.policy) params.set('policy', query.policy);
  if (query.outcome) params.set('outcome', query.outcome);
  if (query.action) params.set('action', query.action);
  if (query.text) params.set('q', query.text);
  if (query.from) params.set('from', query.from);
  if (query.to) params.set('to', query.to);
  if (extra.before) params.set('before', extra.before);
  return params.toString();
}

/** An entry id's time: ids are the epoch milliseconds Redis added them at. */
function idTime(id: string): Date {
  return new Date(Number(id.split('-')[0]));
}

import type { Overview, PolicyRow } from '../console-reader';
import type { SharedForgeStatus } from '../../forge/forge-health';
import { expiryVerdict } from '../../forge/token-expiry';
import { type Html, html } from '../html';
import { outcomeCounts, result, took, when } from './format';
import { layout, type PageFrame } from './layout';

/** `/`: one row per policy, and the forge, Redis, the request budget and the replicas above them. */
export function overviewPage(overview: Overview, frame: PageFrame): Html {
  const { forge, budget, redis, replicas, now } = overview;
  const forgeCard = forge
    ? forge.state === 'ok'
      ? html`<span class="state ok">up</span> ${forge.version ? html`version ${forge.version}` : html`<span class="muted">version unknown</span>`}<br>token of <b>${forge.username}</b>${forge.administrator ? ' (administrator)' : ''}${tokenLine(forge, now)}`
      : html`<span class="state failed">${forge.state.replace('_', ' ')}</span><br><span class="muted">${forge.message}</span>`
    : html`<span class="muted">not checked in the last 10 minutes</span>`;
  const body = html`
<h1>Overview</h1>
<div class="cards">
  <div class="card"><h3>Forge</h3>${overview.forgeUrl}<br>${forgeCard}${forge ? html`<br><span class="muted">checked ${when(forge.checked_at, now)}</span>` : ''}</div>
  <div class="card"><h3>Redis</h3>${redis.where}<br>${redis.answers ? html`<span class="state ok">answers</span>` : html`<span class="state failed">not answering</span>`}</div>
  <div class="card"><h3>Request budget</h3>${budget.limit > 0 ? html`<b>${budget.used}</b> of ${budget.limit} this minute` : html`${budget.used} this minute <span class="muted">(no limit set)</span>`}</div>
  <div class="card"><h3>Replicas seen in the last minute</h3><b>${replicas.length}</b>${replicas.length > 0 ? html`<br><span class="muted">${replicas.map((replica) => replica.name).join(', ')}</span>` : ''}</div>
</div>
${
  overview.policies.length === 0
    ? html`<p>No policies are configured.</p>`
    : html`
<table id="policies">
<thead><tr><th>Policy</th><th>Type</th><th>Trigger</th><th>Mode</th><th>State</th><th>Last pass</th><th>Decisions of the last pass</th><th>Next pass</th><th>Unsettled</th></tr></thead>
<tbody>
${overview.policies.map((row) => policyRow(row, now))}
</tbody>
</table>`
}`;
  return layout('Overview', frame, body, { refreshSeconds: 15 });
}

/**
 * When the daemon's own token stops working, marked as `doctor` judges it (failing within 7 days, a warning within
 * 30), and a rotation of it whose answer was lost.
 */
function tokenLine(forge: SharedForgeStatus, now: Date): Html {
  const pending = forge.token_rotation_pending
    ? html`<br><span class="state failed">token rotation: an answer was lost; the daemon recovers it at its next run</span>`
    : '';
  if (forge.token_expires_at === null) return html`<br><span id="token-expiry">token does not expire</span>${pending}`;
  if (forge.token_expires_at === undefined) {
    const unknown = forge.token_expiry_unknown;
    return html`${unknown ? html`<br><span id="token-expiry" class="muted">token expiry unknown: ${unknown}</span>` : ''}${pending}`;
  }
  const verdict = expiryVerdict({ state: 'expires', date: forge.token_expires_at }, now.getTime());
  const mark = verdict.level === 'failure' ? 'failed' : verdict.level === 'warning' ? 'partial' : 'ok';
  return html`<br><span id="token-expiry" class="state ${mark}">token ${verdict.words}</span>${pending}`;
}

function policyRow(row: PolicyRow, now: Date): Html {
  const last = row.last;
  return html`<tr data-policy="${row.name}">
<td><a href="/policies/${row.name}">${row.name}</a>${row.harm.map((harm) => html`<br><span class="state failed" data-harm="${harm.kind}">own harm open: ${harm.target} (since ${when(harm.since, now)})</span>`)}${row.notices.map((notice) => html`<br><span class="state partial">${notice}</span>`)}</td>
<td>${row.type}</td>
<td>${row.trigger}</td>
<td>${row.dryRun ? html`<span class="state dryrun">dry run</span>` : html`<span class="state running">acting</span>`}</td>
<td>${row.pause ? html`<span class="state paused" title="${row.pause.reason}">paused</span>` : html`<span class="state running">running</span>`}</td>
<td>${last ? html`${when(last.started, now)}<br>${result(last.result)} in ${took(last.took_ms)}` : html`<span class="muted">none recorded</span>`}</td>
<td class="wrap">${last ? outcomeCounts(last.outcomes) : ''}${last?.error ? html`<br><span class="muted">${last.error}</span>` : ''}</td>
<td>${row.pause ? html`<span class="muted">acts once resumed</span>` : row.nextPass ? when(row.nextPass, now) : html`<span class="muted">not scheduled</span>`}</td>
<td>${row.unsettled > 0 ? html`<a href="/policies/${row.name}#unsettled">${row.unsettled}</a>` : '0'}</td>
</tr>`;
}

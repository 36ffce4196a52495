import type { PassResult } from '../../engine/engine.service';
import { SKIP } from '../../engine/policy';
import { type Html, html } from '../html';
import { took, when } from './format';
import { layout, type PageFrame } from './layout';

/**
 * `/policies/<name>/plan`: what `plan` prints for the policy, decided now from the forge: every decision with its
 * reason, skips included; a paused policy's actions as "paused: would …".
 */
export function explainPage(result: PassResult, tookMs: number, frame: PageFrame): Html {
  const pause = result.paused;
  const actions = result.decisions.filter((decision) => decision.action !== SKIP).length;
  const body = html`
<h1>Explain ${result.policy} <span class="muted">${result.type}, ${result.dryRun ? 'dry run' : 'acting'}</span></h1>
<p class="notice">Read from the forge just now (${took(tookMs)}): this observed and decided like a pass, spent the request budget as a pass does, and changed nothing. <a href="/policies/${result.policy}/plan">Explain again</a> · <a href="/policies/${result.policy}">Back to the policy</a></p>
${pause ? html`<p class="notice">Paused since ${when(pause.since, frame.now)} by ${pause.by} (${pause.reason}): a pass now would start none of these actions.</p>` : ''}
${
  result.error !== undefined
    ? html`<p class="error">The pass failed: ${result.error}</p>`
    : html`
<p id="summary">${actions} to act on, ${result.decisions.length - actions} skipped</p>
${result.coveredGroups ? html`<p>Covers ${result.coveredGroups.length} group(s): ${result.coveredGroups.join(', ')}</p>` : ''}
${result.covered ? html`<p>Covers ${result.covered.length} project(s): ${result.covered.join(', ')}</p>` : ''}
${(result.unobserved ?? []).map((target) => html`<p class="error">Not read: ${target.target}: ${target.reason}</p>`)}
${
  result.decisions.length === 0
    ? html`<p class="muted">Nothing to decide.</p>`
    : html`
<table id="decisions"><thead><tr><th>Action</th><th>Target</th><th>Reason</th><th>Details</th></tr></thead><tbody>
${result.decisions.map((decision) => {
  const parked = decision.action === SKIP ? undefined : result.parked?.[decision.key];
  const action =
    decision.action === SKIP
      ? html`<span class="muted">skip</span>`
      : pause
        ? html`<span class="state paused">paused</span>: would ${decision.action}`
        : html`<b>${decision.action}</b>`;
  const details = [
    ...(parked ? [`refused since ${parked.since}: ${parked.message}; looked at again after ${parked.retry_at}`] : []),
    ...(decision.details ?? []),
  ];
  return html`<tr><td>${action}</td><td class="wrap target">${decision.target}</td><td class="wrap">${decision.reason}</td><td class="wrap">${details.map((line) => html`${line}<br>`)}</td></tr>`;
})}
</tbody></table>`
}`
}`;
  return layout(`Explain ${result.policy}`, frame, body);
}

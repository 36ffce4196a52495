import { stringify } from 'yaml';
import type { PolicyDetail } from '../console-reader';
import { type Html, html } from '../html';
import { auditRows } from './audit';
import { outcome, outcomeCounts, result, took, when } from './format';
import { layout, type PageFrame } from './layout';

/** `/policies/<name>`: its settings, the pause switch, its last passes, its open targets and its recent actions. */
export function policyPage(detail: PolicyDetail, frame: PageFrame): Html {
  const { row, now } = { row: detail.row, now: frame.now };
  const name = row.name;
  const body = html`
<h1>${name} <span class="muted">${row.type}</span></h1>
${row.harm.map((harm) => html`<p class="notice harm" data-harm="${harm.kind}"><b>Own harm open</b> since ${when(harm.since, now)}: ${harm.target}: ${harm.reason}. Last repair: ${harm.last}. It is mended first at every pass.</p>`)}
${row.notices.map((notice) => html`<p class="notice">${notice}</p>`)}
<div class="cards">
  <div class="card"><h3>Trigger</h3>${row.trigger}<br>next pass: ${row.pause ? html`<span class="muted">acts once resumed</span>` : when(row.nextPass, now)}</div>
  <div class="card"><h3>Mode</h3>${row.dryRun ? html`<span class="state dryrun">dry run</span> records what it would do` : html`<span class="state running">acting</span>`}</div>
  <div class="card" id="pause">
    <h3>State</h3>
    ${
      row.pause
        ? html`<span class="state paused">paused</span> since ${when(row.pause.since, now)} by ${row.pause.by}<br>reason: <b>${row.pause.reason}</b>
<form method="post" action="/policies/${name}/resume"><input type="hidden" name="form_token" value="${frame.formToken}"><p><button class="primary" type="submit">Resume</button></p></form>`
        : html`<span class="state running">running</span>
<form method="post" action="/policies/${name}/pause"><input type="hidden" name="form_token" value="${frame.formToken}">
<p><label>Reason <input name="reason" required maxlength="500" size="36" placeholder="why: shown in the audit trail"></label> <button class="danger" type="submit">Pause</button></p>
<p class="muted">Every replica stops starting actions for it within a second; passes still observe and decide.</p></form>`
    }
  </div>
</div>
<p><a href="/policies/${name}/plan">Explain: what it would decide now</a> <span class="muted">(reads the forge, changes nothing)</span> · <a href="/audit?policy=${name}">Its audit trail</a></p>

<h2>Last passes</h2>
${
  detail.passes.length === 0
    ? html`<p class="muted">No acting pass recorded yet.</p>`
    : html`
<table id="passes"><thead><tr><th>Started</th><th>Result</th><th>Took</th><th>By</th><th>Decisions</th><th>Looked at</th><th>Replica</th></tr></thead><tbody>
${detail.passes.map(
  (
    pass,
  ) => html`<tr><td>${when(pass.started, now)}</td><td>${result(pass.result)}${pass.dry_run ? html` <span class="muted">(dry run)</span>` : ''}</td><td>${took(pass.took_ms)}</td><td>${pass.occasion}</td>
<td class="wrap">${outcomeCounts(pass.outcomes)}${pass.error ? html`<br><span class="muted">${pass.error}</span>` : ''}</td><td class="wrap">${pass.summary ?? ''}</td><td>${pass.replica}</td></tr>`,
)}
</tbody></table>`
}

<h2 id="unsettled">Unsettled targets</h2>
${
  detail.unsettled.length === 0
    ? html`<p class="muted">None: every decision of the last pass is settled.</p>`
    : html`
<table id="unsettled-targets"><thead><tr><th>Target</th><th>Action</th><th>Outcome</th><th>Open since</th><th>Why</th><th>Looked at again</th></tr></thead><tbody>
${detail.unsettled.map(
  (
    target,
  ) => html`<tr><td class="wrap">${target.target}</td><td>${target.action}</td><td>${outcome(target.outcome)}</td><td>${when(target.since, now)}</td>
<td class="wrap">${target.refusal ? target.refusal.message : (target.detail ?? '')}</td><td>${target.lookedAtAgain ? when(target.lookedAtAgain, now) : html`<span class="muted">once resumed</span>`}</td></tr>`,
)}
</tbody></table>`
}

<h2>Recent actions</h2>
${detail.recent.entries.length === 0 ? html`<p class="muted">No action in the audit trail${detail.recent.stoppedAt ? html` among the last ${detail.recent.scanned} entries` : ''}.</p>` : auditRows(detail.recent.entries, now)}
<p><a href="/audit?policy=${name}">All of its audit trail</a></p>

<h2>Settings as loaded</h2>
<pre id="settings">${stringify(detail.settings)}</pre>
`;
  return layout(name, frame, body);
}

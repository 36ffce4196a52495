/**
 * The console's one stylesheet, served as /console.css (the Content-Security-Policy allows styles from the console
 * itself only, and no script at all).
 */
export const CONSOLE_CSS = `
:root { color-scheme: light; --fg: #1d2430; --muted: #677184; --line: #dde2ea; --bg: #f6f7f9; --card: #fff;
  --ok: #1a7f37; --warn: #9a6700; --bad: #cf222e; --info: #0969da; --paused: #8250df; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
header { display: flex; align-items: center; gap: 24px; padding: 10px 24px; background: #1d2430; color: #fff; }
header a { color: #fff; text-decoration: none; }
header .brand { font-weight: 700; letter-spacing: .02em; }
header nav { display: flex; gap: 16px; }
header nav a { opacity: .85; } header nav a:hover { opacity: 1; text-decoration: underline; }
header form { margin-left: auto; }
main { padding: 20px 24px 40px; max-width: 1500px; }
h1 { font-size: 22px; margin: 4px 0 16px; } h2 { font-size: 16px; margin: 28px 0 10px; }
a { color: var(--info); }
.muted { color: var(--muted); }
.cards { display: flex; flex-wrap: wrap; gap: 12px; margin-bottom: 20px; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 6px; padding: 10px 14px; min-width: 220px; }
.card h3 { margin: 0 0 4px; font-size: 12px; text-transform: uppercase; color: var(--muted); letter-spacing: .05em; }
table { border-collapse: collapse; width: 100%; background: var(--card); border: 1px solid var(--line); }
th, td { text-align: left; padding: 6px 10px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-size: 12px; text-transform: uppercase; color: var(--muted); letter-spacing: .04em; background: #fafbfc; }
td.wrap { max-width: 520px; overflow-wrap: anywhere; }
pre { background: var(--card); border: 1px solid var(--line); padding: 10px 12px; overflow: auto; font-size: 13px; }
.outcome, .result, .state { display: inline-block; padding: 0 6px; border-radius: 10px; font-size: 12px; font-weight: 600; background: #eef1f5; }
.done, .ok, .would_act, .running { color: var(--ok); background: #dafbe1; }
.failed, .refused { color: var(--bad); background: #ffebe9; }
.uncertain, .stale, .deferred, .rate_limited, .partial, .dryrun { color: var(--warn); background: #fff8c5; }
.paused { color: var(--paused); background: #fbefff; }
.scheduled, .in_progress { color: var(--info); background: #ddf4ff; }
.notice { background: #fff8c5; border: 1px solid #eed888; padding: 8px 12px; border-radius: 6px; margin: 10px 0; }
.error { background: #ffebe9; border: 1px solid #f5c2c0; padding: 8px 12px; border-radius: 6px; margin: 10px 0; }
form.filters { display: flex; flex-wrap: wrap; gap: 10px; align-items: flex-end; margin-bottom: 12px; }
form.filters label { display: flex; flex-direction: column; font-size: 12px; color: var(--muted); }
input, select, button { font: inherit; padding: 4px 8px; border: 1px solid var(--line); border-radius: 4px; background: #fff; }
button { cursor: pointer; background: #f3f4f6; } button.danger { color: #fff; background: var(--bad); border-color: var(--bad); }
button.primary { color: #fff; background: var(--ok); border-color: var(--ok); }
.pager { display: flex; gap: 16px; margin: 12px 0; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; background: var(--card); border: 1px solid var(--line); padding: 12px; }
dt { color: var(--muted); } dd { margin: 0; overflow-wrap: anywhere; }
footer { padding: 12px 24px; color: var(--muted); font-size: 12px; }
`;

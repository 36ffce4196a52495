#!/usr/bin/env bash
# Checks what deploy/ ships: the alerting rules are valid and pass their unit tests, the systemd unit verifies, and
# the Grafana dashboard is JSON whose queries parse. One line per check, "ok: ..." or "FAILED: ...", and with
# `--out FILE` a JSON summary {"passed": N, "failed": M} for CI's closing count. Exits 1 when a check failed.
#
#   npm run check:deploy [-- --out FILE]
set -euo pipefail
cd "$(dirname "$0")/.."

out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --out) [ $# -ge 2 ] || { echo "check-deploy: --out needs a file" >&2; exit 2; }; out=$2; shift 2 ;;
    --out=*) out=${1#--out=}; shift ;;
    *) echo "usage: check-deploy.sh [--out FILE]" >&2; exit 2 ;;
  esac
done

passed=0
failed=0
summary() {
  if [ -n "$out" ]; then printf '{ "passed": %d, "failed": %d }\n' "$passed" "$failed" > "$out"; fi
}

# Runs one check quietly; on failure shows what it printed, so the reason is in the log.
check() {
  local name=$1 log
  shift
  log=$(mktemp)
  if "$@" >"$log" 2>&1; then
    echo "ok: $name"
    passed=$((passed + 1))
  else
    echo "FAILED: $name"
    sed 's/^/    /' "$log"
    failed=$((failed + 1))
  fi
  rm -f "$log"
}

if ! command -v promtool >/dev/null 2>&1; then
  echo "FAILED: promtool is not installed; on Debian or Ubuntu: apt-get install --no-install-recommends prometheus" \
    "(or put promtool from a Prometheus release on PATH)"
  failed=$((failed + 1))
  summary
  exit 1
fi

check "promtool check rules deploy/alerts.yml" promtool check rules deploy/alerts.yml
check "promtool test rules deploy/alerts.test.yml" promtool test rules deploy/alerts.test.yml

# The unit names /usr/bin/node, which need not exist here (CI may have node elsewhere), and User=forgewarden, which
# does not (systemd-analyze does not check users). So the copy that is verified differs from the shipped unit in one
# thing only: ExecStart= runs this machine's node. Everything else, hardening directives included, is verified as
# shipped. systemd-analyze exits 0 on an unknown directive or a value it cannot parse ("..., ignoring"), so any line
# it prints about the unit counts as a failure; lines about other units on this machine are shown but not held
# against ours.
verify_unit() {
  local dir node output status=0
  dir=$(mktemp -d)
  node=$(command -v node)
  sed "s#^ExecStart=/usr/bin/node #ExecStart=${node} #" deploy/forgewarden.service > "$dir/forgewarden.service"
  grep -q "^ExecStart=${node} --max-semi-space-size=2 --max-old-space-size=512 /opt/forgewarden/dist/main.js run " "$dir/forgewarden.service" \
    || { echo "ExecStart= does not start with /usr/bin/node --max-semi-space-size=2 --max-old-space-size=512 /opt/forgewarden/dist/main.js run"; rm -rf "$dir"; return 1; }
  local options=(--man=no)
  if systemd-analyze --recursive-errors=no --help >/dev/null 2>&1; then options+=(--recursive-errors=no); fi
  output=$(systemd-analyze verify "${options[@]}" "$dir/forgewarden.service" 2>&1) || status=$?
  rm -rf "$dir"
  [ -z "$output" ] || printf '%s\n' "$output"
  [ "$status" -eq 0 ] || return 1
  ! grep -q 'forgewarden' <<<"$output"
}
if command -v systemd-analyze >/dev/null 2>&1; then
  check "systemd-analyze verify deploy/forgewarden.service" verify_unit
else
  echo "skipped: systemd-analyze verify deploy/forgewarden.service (systemd-analyze is not installed)"
fi

check "deploy/grafana-dashboard.json is JSON" node -e 'JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"))' \
  deploy/grafana-dashboard.json

# Every query of the dashboard (panels and variables) must parse as PromQL: written as recording rules, with
# Grafana's variables replaced by values Prometheus accepts, for promtool to check.
dashboard_queries_parse() {
  local dir status=0
  dir=$(mktemp -d)
  node -e '
    const fs = require("fs");
    const dashboard = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
    const exprs = dashboard.panels.flatMap((panel) => (panel.targets || []).map((t) => t.expr).filter(Boolean));
    if (exprs.length === 0) throw new Error("the dashboard has no queries");
    const promql = (expr) => expr.replaceAll("$__rate_interval", "5m").replaceAll("$policy", ".*");
    const rules = exprs.map((expr, i) => ({ record: `dashboard:query${i}`, expr: promql(expr) }));
    // JSON is YAML, so promtool reads it as a rule file.
    fs.writeFileSync(process.argv[2], JSON.stringify({ groups: [{ name: "dashboard", rules }] }));
  ' deploy/grafana-dashboard.json "$dir/queries.yml" || status=$?
  [ "$status" -ne 0 ] || promtool check rules "$dir/queries.yml" || status=$?
  rm -rf "$dir"
  return "$status"
}
check "deploy/grafana-dashboard.json queries parse" dashboard_queries_parse

echo "check-deploy: $passed ok, $failed failed"
summary
[ "$failed" -eq 0 ]

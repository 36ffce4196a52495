import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseConfig } from '../../src/config/load';
import { MetricsService } from '../../src/metrics/metrics.service';
import { POLICIES, POLICY_TYPES } from '../../src/policies';
import { testConfig } from '../support/config';

/**
 * What deploy/ ships stays in step with the daemon: the alerts, their tests and the dashboard only use metrics the
 * daemon exports (a renamed metric would leave an alert that can never fire), the systemd unit keeps its hardening,
 * and the dashboard is one Grafana can import. promtool and systemd-analyze themselves run in scripts/check-deploy.sh.
 */
const DEPLOY = resolve(__dirname, '../../deploy');
const read = (file: string) => readFileSync(resolve(DEPLOY, file), 'utf8');

/** Names of the series the daemon exports, as Prometheus sees them: a histogram is its _bucket, _sum and _count. */
async function exportedNames(): Promise<Set<string>> {
  const metrics = new MetricsService(testConfig({ prefix: 'deploy-spec' }));
  // The figures policy types publish, as the daemon registers them at start for the policies it runs.
  for (const runner of POLICIES) for (const measure of runner.measures ?? []) metrics.policyMeasure(measure);
  const names = new Set<string>();
  for (const metric of await metrics.registry.getMetricsAsJSON()) {
    // prom-client's types call `type` a numeric enum; at run time it is the type's name.
    switch (String(metric.type)) {
      case 'histogram':
        for (const suffix of ['_bucket', '_sum', '_count']) names.add(metric.name + suffix);
        break;
      case 'summary':
        for (const suffix of ['', '_sum', '_count']) names.add(metric.name + suffix);
        break;
      default:
        // prom-client exports a counter under the name it was given, `_total` included.
        names.add(metric.name);
    }
  }
  return names;
}

const usedNames = (text: string) => [...new Set(text.match(/\bforgewarden_[a-z0-9_]*[a-z0-9]/g) ?? [])].sort();

describe('deploy/ metric names', () => {
  let exported: Set<string>;
  beforeAll(async () => {
    exported = await exportedNames();
  });

  it('are read from the daemon itself', () => {
    expect(exported).toContain('forgewarden_api_requests_total');
    expect(exported).toContain('forgewarden_policy_run_seconds_bucket');
    expect(exported).toContain('process_start_time_seconds');
  });

  it.each(['alerts.yml', 'alerts.test.yml', 'grafana-dashboard.json'])(
    'in %s are all exported by the daemon',
    (file) => {
      const used = usedNames(read(file));
      expect(used.length).toBeGreaterThan(0);
      expect(used.filter((name) => !exported.has(name))).toEqual([]);
    },
  );

  it('include process_start_time_seconds, which the stalled-policy alert joins on', () => {
    expect(read('alerts.yml')).toContain('process_start_time_seconds');
    expect(exported).toContain('process_start_time_seconds');
  });
});

/** `[Section]` → key → values (a key may repeat), comments and blank lines left out. */
function parseUnit(text: string): Map<string, Map<string, string[]>> {
  const sections = new Map<string, Map<string, string[]>>();
  let current: Map<string, string[]> | undefined;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const section = /^\[(.+)\]$/.exec(line);
    if (section) {
      current = new Map();
      sections.set(section[1], current);
      continue;
    }
    const equals = line.indexOf('=');
    if (!current || equals < 1) throw new Error(`not a unit file line: ${line}`);
    const key = line.slice(0, equals).trim();
    current.set(key, [...(current.get(key) ?? []), line.slice(equals + 1).trim()]);
  }
  return sections;
}

/** A systemd time span of the forms the unit uses (`45`, `45s`, `2min`, `1min 30s`), in milliseconds. */
function timeSpanMs(value: string): number {
  const units: Record<string, number> = { '': 1000, s: 1000, sec: 1000, m: 60_000, min: 60_000 };
  let total = 0;
  for (const part of value.split(/\s+/)) {
    const match = /^(\d+)(s|sec|m|min)?$/.exec(part);
    if (!match) throw new Error(`not a time span this test reads: ${value}`);
    total += Number(match[1]) * units[match[2] ?? ''];
  }
  return total;
}

describe('deploy/forgewarden.service', () => {
  const unit = parseUnit(read('forgewarden.service'));
  const service = unit.get('Service') ?? new Map<string, string[]>();
  const value = (key: string) => service.get(key)?.at(-1);

  it('runs the built daemon as its own user, on the policy file, with the environment file', () => {
    expect(value('Type')).toBe('simple');
    expect(value('User')).toBe('forgewarden');
    // With the heap limits the benchmarks measure the daemon with (bench/processes.ts, DAEMON_NODE_FLAGS), as
    // `npm start` does (through `exec`, so that npm's own child is the daemon and npm's signals reach it).
    expect(value('ExecStart')).toBe(
      '/usr/bin/node --max-semi-space-size=2 --max-old-space-size=512 /opt/forgewarden/dist/main.js run -c /etc/forgewarden/policies.yml',
    );
    const scripts = (
      JSON.parse(readFileSync(resolve(__dirname, '../../package.json'), 'utf8')) as { scripts: Record<string, string> }
    ).scripts;
    expect(scripts.start).toBe('exec node --max-semi-space-size=2 --max-old-space-size=512 dist/main.js run');
    expect(value('EnvironmentFile')).toBe('/etc/forgewarden/env');
    expect(value('Restart')).toBe('on-failure');
    expect(unit.get('Install')?.get('WantedBy')).toEqual(['multi-user.target']);
  });

  it('reloads the policy file with SIGHUP', () => {
    expect(value('ExecReload')).toBe('/bin/kill -HUP $MAINPID');
  });

  it('stops with SIGTERM and waits longer than the default shutdown_timeout', () => {
    const defaults = parseConfig(
      'version: 1\ngitlab: { url: "https://gitlab.example.com", token: "glpat-deploy-000000" }\n',
      'deploy.yml',
      {
        policyTypes: POLICY_TYPES,
        env: {},
      },
    );
    expect(value('KillSignal')).toBe('SIGTERM');
    expect(timeSpanMs(value('TimeoutStopSec') ?? '')).toBeGreaterThan(defaults.shutdown_timeout);
  });

  it.each([
    ['NoNewPrivileges', 'yes'],
    ['ProtectSystem', 'strict'],
    ['ProtectHome', 'yes'],
    ['PrivateTmp', 'yes'],
    ['PrivateDevices', 'yes'],
    ['ProtectKernelTunables', 'yes'],
    ['ProtectKernelModules', 'yes'],
    ['ProtectKernelLogs', 'yes'],
    ['ProtectControlGroups', 'yes'],
    ['RestrictAddressFamilies', 'AF_UNIX AF_INET AF_INET6'],
    ['RestrictNamespaces', 'yes'],
    ['LockPersonality', 'yes'],
    ['SystemCallArchitectures', 'native'],
    ['UMask', '0077'],
    ['ReadWritePaths', '/var/lib/forgewarden/keys'],
  ])('is hardened: %s=%s', (key, expected) => {
    expect(service.get(key)).toEqual([expected]);
  });

  it('has a state directory under /var/lib, the key_rotation secrets_dir inside it', () => {
    expect(value('StateDirectory')?.split(/\s+/)).toContain('forgewarden');
  });

  it('leaves MemoryDenyWriteExecute out, which V8 cannot run under', () => {
    expect(service.has('MemoryDenyWriteExecute')).toBe(false);
  });
});

interface Target {
  readonly expr?: unknown;
}
interface Panel {
  readonly title?: string;
  readonly type?: string;
  readonly datasource?: { readonly type?: string; readonly uid?: string };
  readonly targets?: readonly Target[];
}
interface Variable {
  readonly name: string;
  readonly type: string;
  readonly query?: unknown;
  readonly definition?: string;
}

describe('deploy/grafana-dashboard.json', () => {
  const dashboard = JSON.parse(read('grafana-dashboard.json')) as {
    schemaVersion: number;
    uid: string;
    title: string;
    panels: Panel[];
    templating: { list: Variable[] };
  };

  it('is a dashboard Grafana imports', () => {
    expect(dashboard.schemaVersion).toBeGreaterThanOrEqual(36);
    expect(dashboard.uid).toBe('forgewarden');
    expect(dashboard.title).toBeTruthy();
    expect(dashboard.panels.length).toBeGreaterThan(0);
  });

  it('chooses its Prometheus with a datasource variable, and a policy from the configured policies', () => {
    const variables = new Map(dashboard.templating.list.map((variable) => [variable.name, variable]));
    expect(variables.get('DS_PROMETHEUS')).toMatchObject({ type: 'datasource', query: 'prometheus' });
    expect(variables.get('policy')).toMatchObject({
      type: 'query',
      definition: 'label_values(forgewarden_policy_interval_seconds, policy)',
    });
  });

  it('has a Prometheus datasource and a query on every panel', () => {
    for (const panel of dashboard.panels) {
      expect({ title: panel.title, datasource: panel.datasource }).toEqual({
        title: panel.title,
        datasource: { type: 'prometheus', uid: '${DS_PROMETHEUS}' },
      });
      const exprs = (panel.targets ?? [])
        .map((target) => target.expr)
        .filter((expr) => typeof expr === 'string' && expr.trim() !== '');
      expect({ title: panel.title, queries: exprs.length > 0 }).toEqual({ title: panel.title, queries: true });
    }
  });

  it('has panels for every part of the daemon the alerts watch', () => {
    const exprs = dashboard.panels.flatMap((panel) => (panel.targets ?? []).map((target) => String(target.expr)));
    for (const metric of [
      'forgewarden_forge_up',
      'forgewarden_redis_up',
      'forgewarden_config_last_reload_successful',
      'forgewarden_passes_total',
      'forgewarden_last_successful_pass_timestamp_seconds',
      'forgewarden_decisions_total',
      'forgewarden_unsettled_targets',
      'forgewarden_api_requests_total',
      'forgewarden_api_request_budget_per_minute',
      'forgewarden_api_request_duration_seconds_bucket',
      'forgewarden_policy_run_seconds_bucket',
    ]) {
      expect({ metric, shown: exprs.some((expr) => expr.includes(metric)) }).toEqual({ metric, shown: true });
    }
  });
});

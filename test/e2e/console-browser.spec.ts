import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { stringify } from 'yaml';
import { launchBrowser } from '../support/browser';
import { runCli, waitUntil } from '../support/cli';
import {
  ADMIN_TOKEN,
  auditEntries,
  ConsoleRig,
  type Daemon,
  demoPolicies,
  demoPolicyFile,
  demoWorldWithJob,
  isPng,
  metricsOf,
  moveJob,
  onPage,
  passesOf,
  retriesReceived,
  screenshotDir,
  seriesValue,
  type Slot,
} from '../support/console';

/**
 * The operator console as an operator uses it: the built daemon (`forgewarden run -c FILE`) against the sandbox forge,
 * its pages opened, filled in and clicked in Debian's Chromium. What is asserted is what the pages show, what the forge
 * received and what the daemon's other outputs (metrics, `plan`, the NDJSON audit) say; never a log line.
 */

const RESET_LOG = 'Error: read ECONNRESET: connection reset by peer\n';
const HOSTILE_JOB = '<script>alert(1)</script>';

/** A one-policy file of the rig's own: job_retry over acme/api, in dry run, so the forge stays as the world has it. */
function retryOnlyFile(forge: string, slot: Slot, http: Record<string, unknown> = {}): string {
  return stringify({
    version: 1,
    gitlab: { url: forge, token: ADMIN_TOKEN },
    redis: { url: process.env.REDIS_URL, prefix: slot.prefix },
    http: { port: slot.port, ...http },
    dry_run: true,
    policies: [
      {
        name: 'retry-flaky',
        type: 'job_retry',
        projects: ['acme/api'],
        interval: '1h',
        lookback: '2d',
        match: { stages: ['test'], failure_log: ['(?i)connection reset'] },
      },
    ],
  });
}

/** The rows of the explain page's decisions table as (action, target, reason), a paused action as the action it would be. */
async function explainRows(page: Page): Promise<string[]> {
  const rows = page.locator('#decisions tbody tr');
  const result: string[] = [];
  for (let i = 0; i < (await rows.count()); i++) {
    const cells = await rows.nth(i).locator('td').allTextContents();
    result.push([cells[0].replace(/^paused: would /, ''), cells[1], cells[2]].join(' | '));
  }
  return result.sort();
}

/** The entry ids of the audit page's rows. */
async function auditIds(page: Page): Promise<string[]> {
  const rows = page.locator('table.audit tbody tr[data-id]');
  const ids: string[] = [];
  for (let i = 0; i < (await rows.count()); i++) ids.push((await rows.nth(i).getAttribute('data-id')) ?? '');
  return ids;
}

/** The policy cell of every row of the audit page's table. */
async function auditPolicies(page: Page): Promise<string[]> {
  return page.locator('table.audit tbody tr[data-id] td:nth-child(2)').allTextContents();
}

describe('the console in a browser', () => {
  let browser: Browser;

  beforeAll(async () => {
    // Starting Chromium takes a few seconds on a loaded 2-core machine.
    browser = await launchBrowser();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
  });

  describe('over the demo world, with config/demo.yml', () => {
    const rig = new ConsoleRig('demo');
    const policies = demoPolicies();
    const passing = policies.filter((policy) => policy.interval !== undefined).map((policy) => policy.name);
    let daemon: Daemon;

    beforeAll(async () => {
      const forge = await rig.sandbox();
      // Named as `npm run demo` names its key directory, which the audit entries (and so the screenshots) show.
      daemon = await rig.daemon((slot) => demoPolicyFile(forge, slot, { secretsDir: rig.tempDir('demo-keys') }));
      // Interval policies pass once at the start; the cron one (nightly-image-cleanup, 03:00) does not.
      await waitUntil(
        'every interval policy passed once',
        async () => {
          const metrics = await metricsOf(daemon);
          return passing.every((name) => passesOf(metrics, name) >= 1);
        },
        90_000,
      );
    }, 180_000);

    afterAll(() => rig.close(), 60_000);

    it('the overview lists every policy of the file, and each interval policy with the result of its last pass', async () => {
      expect(passing.length).toBeGreaterThan(0);
      await onPage(browser, async (page) => {
        // The pass log and the metrics are written one after the other: wait for the badges themselves.
        await waitUntil(
          'every interval policy shows a result',
          async () => {
            await page.goto(`${daemon.url}/`);
            const badges = await Promise.all(
              passing.map((name) => page.locator(`#policies tr[data-policy="${name}"] .result`).count()),
            );
            return badges.every((count) => count === 1);
          },
          30_000,
        );
        const rows = page.locator('#policies tbody tr[data-policy]');
        const listed: string[] = [];
        for (let i = 0; i < (await rows.count()); i++)
          listed.push((await rows.nth(i).getAttribute('data-policy')) ?? '');
        expect(listed).toEqual(policies.map((policy) => policy.name));

        const metrics = await metricsOf(daemon);
        for (const name of passing) {
          const result = (await page.locator(`#policies tr[data-policy="${name}"] .result`).textContent())?.trim();
          expect([name, result]).toEqual([name, 'ok']);
          // The badge is the pass the daemon counted.
          expect(seriesValue(metrics, `forgewarden_passes_total{policy="${name}",result="ok"}`)).toBeGreaterThanOrEqual(
            1,
          );
        }
        expect(
          await page.locator('#policies tr[data-policy="nightly-image-cleanup"] td:nth-child(3)').textContent(),
        ).toBe('cron 0 3 * * * (Europe/Berlin)');
      });
    });

    it("the audit page's filter narrows the trail to the policy chosen", async () => {
      await onPage(browser, async (page) => {
        await page.goto(`${daemon.url}/audit`);
        expect(await auditPolicies(page)).toEqual(expect.arrayContaining(['staff-access', 'retry-transient-failures']));

        const seen = new Map<string, string[]>();
        for (const name of ['staff-access', 'retry-transient-failures']) {
          await page.selectOption('form.filters select[name="policy"]', name);
          await Promise.all([
            page.waitForURL((url) => url.pathname === '/audit' && url.searchParams.get('policy') === name),
            page.click('form.filters button[type="submit"]'),
          ]);
          const shown = await auditPolicies(page);
          expect(shown.length).toBeGreaterThan(0);
          expect(new Set(shown)).toEqual(new Set([name]));
          // The form keeps the filter it shows.
          expect(await page.locator('form.filters select[name="policy"]').inputValue()).toBe(name);
          seen.set(name, await auditIds(page));
        }
        // Two filters, two disjoint sets of entries, both from the same trail.
        const [access, retry] = [seen.get('staff-access') ?? [], seen.get('retry-transient-failures') ?? []];
        expect(access.filter((id) => retry.includes(id))).toEqual([]);
      });
    });

    it('/audit.ndjson pages through the whole trail by its Link header, and refuses a cursor that is no entry id', async () => {
      const whole = await auditEntries(daemon, 'limit=1000');
      expect(whole.length).toBeGreaterThan(5);
      const paged: unknown[] = [];
      let next: string | undefined = '/audit.ndjson?limit=5';
      for (let pages = 0; next !== undefined; pages++) {
        expect(pages).toBeLessThan(whole.length);
        const answer: Response = await fetch(`${daemon.url}${next}`);
        expect(answer.status).toBe(200);
        expect(answer.headers.get('content-type')).toMatch(/^application\/x-ndjson/);
        const lines = (await answer.text()).split('\n').filter((line) => line !== '');
        expect(lines.length).toBeLessThanOrEqual(5);
        paged.push(...lines.map((line) => (JSON.parse(line) as { id: string }).id));
        next = /^<([^>]+)>; rel="next"$/.exec(answer.headers.get('link') ?? '')?.[1];
      }
      expect(paged).toEqual(whole.map((entry) => entry.id));

      const bogus = await fetch(`${daemon.url}/audit.ndjson?before=1;DROP`);
      expect(bogus.status).toBe(400);
      expect(await bogus.text()).toContain('"before" is no audit entry id');
      await onPage(browser, async (page) => {
        const shown = await page.goto(`${daemon.url}/audit?before=yesterday`);
        expect(shown?.status()).toBe(200);
        expect(await page.locator('p.error').textContent()).toContain('"before" is no audit entry id');
        // The page then starts from the newest entry.
        expect(await auditIds(page)).toEqual(whole.slice(0, 50).map((entry) => entry.id));
      });
    });

    it.each(['nightly-image-cleanup', 'staff-access'])(
      'explain (/policies/%s/plan) shows the decisions `plan` prints',
      async (name) => {
        // Neither acts meanwhile: the cleanup runs at 03:00 only, and staff-access's first pass left only requests it
        // leaves alone, so a pass of it between the two changes nothing on the forge.
        const planned = await runCli(['plan', '-c', daemon.file, '--policy', name, '--json'], daemon.env, 60_000);
        expect(planned.code).toBe(0);
        const [result] = JSON.parse(planned.stdout) as Array<{
          decisions: Array<{ action: string; target: string; reason: string }>;
        }>;
        const fromPlan = result.decisions
          .map((decision) => [decision.action, decision.target, decision.reason].join(' | '))
          .sort();
        expect(fromPlan.length).toBeGreaterThan(0);

        await onPage(browser, async (page) => {
          await page.goto(`${daemon.url}/policies/${name}/plan`);
          expect(await explainRows(page)).toEqual(fromPlan);
          const acting = result.decisions.filter((decision) => decision.action !== 'skip').length;
          expect(await page.locator('#summary').textContent()).toBe(
            `${acting} to act on, ${result.decisions.length - acting} skipped`,
          );
        });
      },
    );

    it('console pages carry a Content-Security-Policy without inline script or framing, and nosniff', async () => {
      for (const path of ['/', '/policies/staff-access', '/audit', '/audit.ndjson']) {
        const answer = await fetch(`${daemon.url}${path}`);
        expect([path, answer.status]).toEqual([path, 200]);
        const policy = answer.headers.get('content-security-policy') ?? '';
        expect(policy).toContain("frame-ancestors 'none'");
        expect(policy).not.toContain('unsafe-inline');
        expect(policy).not.toContain('unsafe-eval');
        expect(answer.headers.get('x-content-type-options')).toBe('nosniff');
      }
    });

    it('screenshots the overview, a policy page and the audit trail (FORGEWARDEN_SCREENSHOTS, else a temporary directory)', async () => {
      const dir = screenshotDir(rig);
      const shots: Array<[string, string, string]> = [
        ['overview.png', '/', '#policies'],
        ['policy.png', '/policies/retry-transient-failures', '#passes'],
        ['audit.png', '/audit', 'table.audit'],
      ];
      await onPage(browser, async (page) => {
        for (const [file, path, shown] of shots) {
          await page.goto(`${daemon.url}${path}`);
          await page.locator(shown).waitFor();
          await page.screenshot({ path: join(dir, file), fullPage: true });
        }
      });
      for (const [file] of shots) {
        expect([file, existsSync(join(dir, file)) && isPng(join(dir, file))]).toEqual([file, true]);
      }
    });
  });

  describe("pausing a policy with the policy page's button", () => {
    const rig = new ConsoleRig('pause');
    const policy = 'retry-transient-failures';
    const paused = `forgewarden_decisions_total{policy="${policy}",action="retry",outcome="paused"}`;
    let forge: string;
    let daemon: Daemon;

    beforeAll(async () => {
      forge = await rig.sandbox();
      // Polls every 2 s, so that "over several passes" and "retried once resumed" take seconds.
      daemon = await rig.daemon((slot) =>
        demoPolicyFile(forge, slot, { secretsDir: rig.tempDir(), retryInterval: '2s' }),
      );
      await waitUntil(
        "the first pass retried the demo world's two failures",
        async () => (await retriesReceived(forge)).length === 2,
        60_000,
      );
    }, 120_000);

    afterAll(() => rig.close(), 60_000);

    it('paused: shown with its reason, counted, audited, and a new failure is not retried over several passes; resumed: it is', async () => {
      const reason = 'the runners are being replaced (INC-4711)';
      const policyUrl = `${daemon.url}/policies/${policy}`;
      await onPage(browser, async (page) => {
        await page.goto(policyUrl);
        expect(await page.locator('#pause .state').textContent()).toBe('running');
        await page.fill('#pause input[name="reason"]', reason);
        const [pausing] = await Promise.all([
          page.waitForResponse(
            (response) => response.url() === `${policyUrl}/pause` && response.request().method() === 'POST',
          ),
          page.click('#pause button[type="submit"]'),
        ]);
        expect(pausing.status()).toBe(303);
        await page.waitForURL(policyUrl);
        await page.locator('#pause .state.paused').waitFor();
        expect(await page.locator('#pause b').textContent()).toBe(reason);
        expect(await page.locator('#pause').textContent()).toContain('by console (127.0.0.1)');
        expect(await metricsOf(daemon)).toContain(`forgewarden_policy_paused{policy="${policy}"} 1`);

        // A failure the policy's rule matches, after the pause: passes see it and decide to retry it, several times over,
        // but nothing reaches the forge.
        const before = seriesValue(await metricsOf(daemon), paused);
        await moveJob(forge, 1003, { status: 'failed', log: RESET_LOG });
        await waitUntil(
          'three passes decided to retry job 1003 while paused',
          async () => seriesValue(await metricsOf(daemon), paused) >= before + 3,
          60_000,
        );
        expect(await retriesReceived(forge)).not.toContain('/api/v4/projects/1/jobs/1003/retry');
        // The page says what is held back, and that it waits for the resume.
        await page.reload();
        const open = page.locator('#unsettled-targets tbody tr', { hasText: 'acme/api job 1003 (lint)' });
        expect(await open.locator('.outcome').textContent()).toBe('paused');
        expect(await open.textContent()).toContain('once resumed');

        const entries = await auditEntries(daemon, `policy=${policy}`);
        const pauseEntry = entries.find((entry) => entry.action === 'pause');
        expect(pauseEntry).toMatchObject({
          policy,
          target: `policy ${policy}`,
          reason,
          outcome: 'done',
          dry_run: false,
          detail: 'by console (127.0.0.1)',
        });

        const [resuming] = await Promise.all([
          page.waitForResponse(
            (response) => response.url() === `${policyUrl}/resume` && response.request().method() === 'POST',
          ),
          page.click('#pause button[type="submit"]'),
        ]);
        expect(resuming.status()).toBe(303);
        await page.waitForURL(policyUrl);
        await page.locator('#pause .state.running').waitFor();
      });
      await waitUntil(
        'job 1003 is retried once resumed',
        async () => (await retriesReceived(forge)).includes('/api/v4/projects/1/jobs/1003/retry'),
        30_000,
      );
      expect(
        (await retriesReceived(forge)).filter((path) => path === '/api/v4/projects/1/jobs/1003/retry'),
      ).toHaveLength(1);
      expect(await metricsOf(daemon)).toContain(`forgewarden_policy_paused{policy="${policy}"} 0`);
      const resumed = (await auditEntries(daemon, `policy=${policy}&action=resume`))[0];
      expect(resumed).toMatchObject({ action: 'resume', outcome: 'done' });
      expect(String(resumed.detail)).toContain(reason);
    });
  });

  describe('names and reasons that hold markup', () => {
    const rig = new ConsoleRig('markup');
    let daemon: Daemon;

    beforeAll(async () => {
      const forge = await rig.sandbox(demoWorldWithJob(rig.tempDir(), HOSTILE_JOB, RESET_LOG));
      daemon = await rig.daemon((slot) => retryOnlyFile(forge, slot));
      await waitUntil(
        'the dry run recorded the retry of job 1020',
        async () =>
          (await auditEntries(daemon, 'policy=retry-flaky')).some((entry) => String(entry.target).includes('job 1020')),
        60_000,
      );
    }, 120_000);

    afterAll(() => rig.close(), 60_000);

    /** No element the markup could have made: the console has no script of its own, and no images. */
    async function expectInert(page: Page): Promise<void> {
      expect(await page.locator('script').count()).toBe(0);
      expect(await page.locator('img').count()).toBe(0);
    }

    it('a job named <script>alert(1)</script> is text on the audit, entry and explain pages, and nothing runs', async () => {
      await onPage(browser, async (page) => {
        await page.goto(`${daemon.url}/audit`);
        const targets = await page.locator('table.audit .target').allTextContents();
        expect(targets).toContain(`acme/api job 1020 (${HOSTILE_JOB})`);
        await expectInert(page);

        const entry = page.locator('table.audit tbody tr[data-id]', { hasText: 'job 1020' }).first();
        await Promise.all([page.waitForURL(/\/audit\/\d+-\d+$/), entry.locator('td:first-child a').click()]);
        expect(await page.locator('dl').textContent()).toContain(`acme/api job 1020 (${HOSTILE_JOB})`);
        await expectInert(page);

        await page.goto(`${daemon.url}/policies/retry-flaky/plan`);
        expect(await page.locator('#decisions .target').allTextContents()).toContain(
          `acme/api job 1020 (${HOSTILE_JOB})`,
        );
        await expectInert(page);

        // The audit filter echoes what was typed into its form, escaped.
        await page.goto(`${daemon.url}/audit?q=${encodeURIComponent(HOSTILE_JOB)}`);
        expect(await page.locator('form.filters input[name="q"]').inputValue()).toBe(HOSTILE_JOB);
        const found = await page.locator('table.audit .target').allTextContents();
        expect(found.length).toBeGreaterThan(0);
        expect(new Set(found)).toEqual(new Set([`acme/api job 1020 (${HOSTILE_JOB})`]));
        await expectInert(page);
      });
    });

    it('an unknown policy named with markup is named as text on the 404 page', async () => {
      await onPage(browser, async (page) => {
        const answer = await page.goto(`${daemon.url}/policies/${encodeURIComponent(HOSTILE_JOB)}`);
        expect(answer?.status()).toBe(404);
        expect(await page.locator('main').textContent()).toContain(`No policy named "${HOSTILE_JOB}" is configured`);
        await expectInert(page);
      });
    });

    it('a pause reason with markup is shown as typed on the policy page and in the audit trail', async () => {
      const reason = `"><img src=x onerror=alert(2)>${HOSTILE_JOB}`;
      await onPage(browser, async (page) => {
        await page.goto(`${daemon.url}/policies/retry-flaky`);
        await page.fill('#pause input[name="reason"]', reason);
        await Promise.all([
          page.waitForResponse((response) => response.url().endsWith('/pause')),
          page.click('#pause button[type="submit"]'),
        ]);
        await page.locator('#pause .state.paused').waitFor();
        expect(await page.locator('#pause b').textContent()).toBe(reason);
        await expectInert(page);

        await page.goto(`${daemon.url}/audit?policy=retry-flaky&action=pause`);
        expect(await page.locator('table.audit tbody tr[data-id] td:nth-child(6)').allTextContents()).toEqual([reason]);
        await expectInert(page);

        await page.goto(`${daemon.url}/`);
        expect(await page.locator('#policies tr[data-policy="retry-flaky"] .state.paused').getAttribute('title')).toBe(
          reason,
        );
        await expectInert(page);
      });
    });
  });

  describe('a console off loopback (http.host 0.0.0.0)', () => {
    const rig = new ConsoleRig('remote');
    const token = 'e2e-console-token-0123456789abcdef';
    let withToken: Daemon;
    let withoutToken: Daemon;

    beforeAll(async () => {
      const forge = await rig.sandbox();
      [withToken, withoutToken] = await Promise.all([
        rig.daemon(
          (slot) => retryOnlyFile(forge, slot, { host: '0.0.0.0', console_token: '${FORGEWARDEN_CONSOLE_TOKEN}' }),
          { FORGEWARDEN_CONSOLE_TOKEN: token },
        ),
        rig.daemon((slot) => retryOnlyFile(forge, slot, { host: '0.0.0.0' })),
      ]);
    }, 120_000);

    afterAll(() => rig.close(), 60_000);

    it('asks for the token: 401 to a script, the login form to a browser, 200 with the bearer token', async () => {
      const json = await fetch(`${withToken.url}/`, { headers: { accept: 'application/json' } });
      expect(json.status).toBe(401);
      expect(json.headers.get('www-authenticate')).toContain('Bearer');

      const html = await fetch(`${withToken.url}/`, {
        headers: { accept: 'text/html,application/xhtml+xml' },
        redirect: 'manual',
      });
      expect(html.status).toBe(303);
      expect(html.headers.get('location')).toBe('/login?next=%2F');

      const wrong = await fetch(`${withToken.url}/`, {
        headers: { accept: 'application/json', authorization: 'Bearer not-the-console-token-at-all' },
      });
      expect(wrong.status).toBe(401);

      const bearer = await fetch(`${withToken.url}/`, { headers: { authorization: `Bearer ${token}` } });
      expect(bearer.status).toBe(200);
      expect(await bearer.text()).toContain('<table id="policies">');
    });

    it('without http.console_token it is off: 404 whatever is sent, while /healthz and /metrics answer', async () => {
      const asked: Array<Record<string, string>> = [
        { accept: 'application/json' },
        { accept: 'text/html' },
        { authorization: `Bearer ${token}` },
      ];
      for (const headers of asked) {
        const answer = await fetch(`${withoutToken.url}/`, { headers, redirect: 'manual' });
        expect(answer.status).toBe(404);
        expect(await answer.text()).toContain('The console is off');
      }
      expect((await fetch(`${withoutToken.url}/audit.ndjson`)).status).toBe(404);
      expect((await fetch(`${withoutToken.url}/healthz`)).status).toBe(200);
      expect((await fetch(`${withoutToken.url}/metrics`)).status).toBe(200);
    });

    it('the login form refuses a wrong token and takes the right one, setting an HttpOnly SameSite=Strict cookie', async () => {
      await onPage(browser, async (page) => {
        await page.goto(`${withToken.url}/`);
        expect(new URL(page.url()).pathname).toBe('/login');

        await page.fill('input[name="token"]', 'not-the-console-token-at-all');
        const [refused] = await Promise.all([
          page.waitForResponse(
            (response) => response.url().endsWith('/login') && response.request().method() === 'POST',
          ),
          page.click('button[type="submit"]'),
        ]);
        expect(refused.status()).toBe(401);
        expect(await page.locator('.error').textContent()).toBe('That is not the console token.');
        expect(await page.context().cookies()).toEqual([]);

        await page.fill('input[name="token"]', token);
        await Promise.all([page.waitForURL(`${withToken.url}/`), page.click('button[type="submit"]')]);
        await page.locator('#policies tr[data-policy="retry-flaky"]').waitFor();

        const cookies = await page.context().cookies();
        expect(cookies).toHaveLength(1);
        expect(cookies[0]).toMatchObject({
          name: 'forgewarden_console',
          httpOnly: true,
          sameSite: 'Strict',
          path: '/',
        });
        expect(cookies[0].value).not.toContain(token);
        // Logged in, the pages offer to log out, which ends the session.
        await Promise.all([page.waitForURL(/\/login$/), page.click('header form[action="/logout"] button')]);
        expect(await page.context().cookies()).toEqual([]);
        const again = await page.goto(`${withToken.url}/audit`);
        expect(new URL(page.url()).pathname).toBe('/login');
        expect(again?.status()).toBe(200);
      });
    });

    it('a POST to the pause route without the form token is refused 403 and pauses nothing', async () => {
      const bearer = { authorization: `Bearer ${token}` };
      const form = { 'content-type': 'application/x-www-form-urlencoded' };
      const pauseUrl = `${withToken.url}/policies/retry-flaky/pause`;
      const bare = await fetch(pauseUrl, {
        method: 'POST',
        headers: { ...bearer, ...form },
        body: 'reason=no+form+token',
        redirect: 'manual',
      });
      expect(bare.status).toBe(403);
      const forged = await fetch(pauseUrl, {
        method: 'POST',
        headers: { ...bearer, ...form },
        body: 'reason=forged&form_token=not-a-form-token',
        redirect: 'manual',
      });
      expect(forged.status).toBe(403);
      // Logged in with the cookie, the same: the cookie alone is what a page of another site would bring along.
      await onPage(browser, async (page) => {
        await page.goto(`${withToken.url}/login`);
        await page.fill('input[name="token"]', token);
        await Promise.all([page.waitForURL(`${withToken.url}/`), page.click('button[type="submit"]')]);
        const posted = await page
          .context()
          .request.post(pauseUrl, { form: { reason: 'cookie only' }, maxRedirects: 0 });
        expect(posted.status()).toBe(403);
      });

      const nothingPaused = async () => {
        expect(await metricsOf(withToken)).toContain('forgewarden_policy_paused{policy="retry-flaky"} 0');
        expect((await auditEntries(withToken, 'policy=retry-flaky&action=pause', token)).length).toBe(0);
        const page = await (await fetch(`${withToken.url}/policies/retry-flaky`, { headers: bearer })).text();
        expect(page).toContain('<span class="state running">running</span>');
      };
      await nothingPaused();

      // The same POST with the page's form token is taken: the refusals above were the missing token's.
      const policyPage = await (await fetch(`${withToken.url}/policies/retry-flaky`, { headers: bearer })).text();
      const formToken = /name="form_token" value="([^"]+)"/.exec(policyPage)?.[1] ?? '';
      expect(formToken).not.toBe('');
      const taken = await fetch(pauseUrl, {
        method: 'POST',
        headers: { ...bearer, ...form },
        body: new URLSearchParams({ reason: 'with the form token', form_token: formToken }).toString(),
        redirect: 'manual',
      });
      expect(taken.status).toBe(303);
      expect(await metricsOf(withToken)).toContain('forgewarden_policy_paused{policy="retry-flaky"} 1');
    });
  });
});

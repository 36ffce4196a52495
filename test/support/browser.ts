import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';

/**
 * Browser tests drive the system's Chromium (Debian's `chromium` package) through playwright-core, which never
 * downloads a browser of its own: CHROMIUM_PATH when set, else /usr/bin/chromium, else /usr/bin/chromium-browser.
 */
function chromiumPath(): string {
  const explicit = process.env.CHROMIUM_PATH;
  if (explicit) {
    if (!existsSync(explicit)) throw new Error(`CHROMIUM_PATH=${explicit} does not exist`);
    return explicit;
  }
  const found = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((path) => existsSync(path));
  if (!found) {
    throw new Error(
      'browser tests need Chromium, found neither /usr/bin/chromium nor /usr/bin/chromium-browser: install it with ' +
        '`apt-get install chromium` (Debian), or set CHROMIUM_PATH to a Chromium or Chrome binary',
    );
  }
  return found;
}

const ARGS = [
  // No GPU on test machines; without this Chromium probes for one and logs errors.
  '--disable-gpu',
  // The network is closed here: QUIC, background requests (safe browsing, variations), component and sync updates
  // would only be refused, many at a time, at every start. Tests talk to 127.0.0.1 only.
  '--disable-quic',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  // /dev/shm is small in containers, and Debian's launcher fails to decide this itself where /dev/shm is mounted
  // twice (its findmnt check prints two lines): use /tmp for shared memory, always.
  '--disable-dev-shm-usage',
];

/** A headless Chromium; the caller closes it. */
export async function launchBrowser(): Promise<Browser> {
  // Chromium refuses to start its sandbox as root; CI and these machines run as root.
  const asRoot = process.getuid?.() === 0;
  return chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    args: asRoot ? ['--no-sandbox', ...ARGS] : ARGS,
  });
}

/** Runs `fn` on a page of its own context (no cookies or storage shared with other tests), closed afterwards. */
export async function withPage<T>(browser: Browser, fn: (page: Page) => Promise<T>): Promise<T> {
  const context = await browser.newContext();
  try {
    return await fn(await context.newPage());
  } finally {
    await context.close();
  }
}

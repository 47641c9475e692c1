/**
 * Shared set-up for the browser tests: builds dist/app when needed, starts a real hub on port 0
 * serving it, launches Debian's headless Chromium through playwright-core, and opens signed-in
 * pages. Every context, RPC client and page error is tracked so one `stop()` tears it all down.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type Page } from 'playwright-core';
import { RpcClient } from '../helpers/rpc-client.js';
import { startTestServer, type TestServer } from '../helpers/start-server.js';
import { startScriptTurn } from '../helpers/turns.js';
import { waitFor } from '../helpers/wait-for.js';

export const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
export const ARTIFACTS = 'test/artifacts';
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'];
const BUILD_LOCK = 'dist/.app-build.lock';

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs);
  }
  return newest;
}

function appIsStale(): boolean {
  const out = 'dist/app/app.js';
  return !existsSync(out) || !existsSync('dist/app/index.html') || statSync(out).mtimeMs < Math.max(newestMtime('app'), newestMtime('shared'));
}

/**
 * Builds dist/app when it is missing or older than its sources. Several test files (vitest
 * workers) may ask at once: one builds under a lock directory while the others wait for it, so no
 * hub serves a half-written bundle.
 */
export async function ensureAppBuilt(): Promise<void> {
  if (!appIsStale()) return;
  mkdirSync('dist', { recursive: true });
  await waitFor(
    () => {
      try {
        mkdirSync(BUILD_LOCK);
        return true;
      } catch {
        // Another worker builds; a lock left behind by a killed run is taken over after a minute.
        if (Date.now() - statSync(BUILD_LOCK, { throwIfNoEntry: false })!.mtimeMs > 60_000) rmdirSync(BUILD_LOCK);
        return undefined;
      }
    },
    { what: 'the app build lock', timeoutMs: 60_000 },
  );
  try {
    if (appIsStale()) execFileSync(process.execPath, ['scripts/build-app.mjs'], { stdio: 'inherit' });
  } finally {
    rmdirSync(BUILD_LOCK);
  }
}

/** A hub serving dist/app plus a headless Chromium, with the helpers the browser tests share. */
export class BrowserHub {
  readonly pageErrors: string[] = [];
  readonly #contexts: BrowserContext[] = [];
  readonly #clients: RpcClient[] = [];
  #server: TestServer | undefined;
  #browser: Browser | undefined;

  private constructor() {}

  /**
   * The one hub a test file shares: started in `beforeAll`, stopped in `afterAll`. Call it at the
   * top of the file or of a `describe`; the handle is usable inside tests (not at collection time).
   */
  static perFile(): BrowserHub {
    const hub = new BrowserHub();
    beforeAll(() => hub.#launch(), 60_000);
    afterAll(() => hub.stop());
    return hub;
  }

  get server(): TestServer {
    if (!this.#server) throw new Error('BrowserHub not started: use it inside a test, after beforeAll');
    return this.#server;
  }

  get browser(): Browser {
    if (!this.#browser) throw new Error('BrowserHub not started: use it inside a test, after beforeAll');
    return this.#browser;
  }

  async #launch(): Promise<void> {
    if (!existsSync(CHROMIUM)) {
      throw new Error(`Chromium not found at ${CHROMIUM}: install Debian's chromium (apt-get install chromium; .ci/run does) or set CHROMIUM_PATH`);
    }
    await ensureAppBuilt();
    mkdirSync(ARTIFACTS, { recursive: true });
    const server = await startTestServer({ withAuth: true, staticDir: 'dist/app' });
    try {
      this.#browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    } catch (err) {
      await server.stop();
      throw err;
    }
    this.#server = server;
  }

  /** Tears down whatever started (a failed launch leaves nothing behind to stop). */
  async stop(): Promise<void> {
    for (const c of this.#contexts) await c.close().catch(() => {});
    await this.#browser?.close();
    await Promise.all(this.#clients.map((c) => c.close()));
    await this.#server?.stop();
  }

  /** A JSON-RPC client on the hub, closed by `stop()`. */
  async rpc(token: string): Promise<RpcClient> {
    const c = await RpcClient.open(this.server.wsUrl, { token });
    this.#clients.push(c);
    return c;
  }

  /** A session whose turn runs the demo agent's `script`, as `token`'s user; the returned client is subscribed to its chat. */
  async scriptedSession(token: string, title: string, script: unknown[]): Promise<{ setup: RpcClient; session: string; chat: string }> {
    const setup = await this.rpc(token);
    const { session, chat } = await setup.createSession(title);
    await setup.subscribe(chat);
    await startScriptTurn(setup, chat, script);
    return { setup, session, chat };
  }

  /** A fresh browser context (its own storage, so its own sign-in), closed by `stop()`. */
  async newContext(options: BrowserContextOptions = { viewport: { width: 1100, height: 900 } }): Promise<BrowserContext> {
    const context = await this.browser.newContext(options);
    this.#contexts.push(context);
    return context;
  }

  /** Records uncaught page errors; every test ends with `expect(hub.pageErrors).toEqual([])`. */
  watch(page: Page): Page {
    page.on('pageerror', (err) => this.pageErrors.push(err.message));
    return page;
  }

  /** Opens `path` in a new context signed in with `token` and waits until the app is connected. */
  async open(token: string, path: string): Promise<Page> {
    const page = this.watch(await (await this.newContext()).newPage());
    const sep = path.includes('?') ? '&' : '?';
    await page.goto(`${this.server.url}${path}${sep}token=${encodeURIComponent(token)}`);
    await page.locator('[data-testid=connection]', { hasText: 'Connected' }).waitFor();
    return page;
  }
}

export function sessionPath(session: string): string {
  return `/s/${encodeURIComponent(session.replace('ahp-session:/', ''))}`;
}

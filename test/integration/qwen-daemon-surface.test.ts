/**
 * Every `DaemonClient` method (qwen serve 0.24's client surface, `@qwen-code/sdk` unmodified)
 * against the hub: a method whose route the hub does not serve gets a `DaemonHttpError` 404 —
 * never a parse error from the browser app's HTML — and the routes added for qwen's clients
 * (`status`, `heartbeat`, `pending-prompts`) answer with qwen's shapes.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DaemonClient, DaemonHttpError } from '@qwen-code/sdk';
import { startTestServer, TOKENS, type TestServer } from '../helpers/start-server.js';
import { waitFor } from '../helpers/wait-for.js';

/** Methods that are not one HTTP call (streams, local helpers, polling loops). */
const NOT_A_REQUEST = new Set(['constructor', 'subscribeEvents', 'requireCapability', 'extensionOperation', 'waitForTurn', 'prompt', 'dispose', 'closeSession']);
/** Refusals the client raises itself, before any request, for the probe's placeholder arguments. */
const CLIENT_SIDE = /CapabilityMissing|Failed to parse URL|must be|is not a function|AbortSignal|XMLHttpRequest/;

describe('the whole DaemonClient surface', () => {
  let server: TestServer;
  let app: string;
  afterEach(async () => {
    await server.stop();
    rmSync(app, { recursive: true, force: true });
  });

  it('answers each method with JSON: DaemonHttpError 404 for the routes this hub does not serve, never a parse error', async () => {
    app = mkdtempSync(join(tmpdir(), 'qwen-app-'));
    writeFileSync(join(app, 'index.html'), '<!doctype html><title>app</title>');
    server = await startTestServer({ withAuth: true, staticDir: app });
    const client = new DaemonClient({ baseUrl: server.url, token: TOKENS.alice });
    const { sessionId } = await client.createOrAttachSession({ sessionId: 'probe-session' } as never);
    const names = Object.getOwnPropertyNames(DaemonClient.prototype).filter((n) => !NOT_A_REQUEST.has(n) && typeof (DaemonClient.prototype as any)[n] === 'function' && !n.startsWith('_'));
    expect(names.length).toBeGreaterThan(100);
    const outcomes: Record<string, string> = {};
    for (const name of names) {
      const fn = (client as any)[name] as (...args: unknown[]) => Promise<unknown>;
      const args = Array.from({ length: Math.max(fn.length, 1) }, (_v, i) => (i === 0 ? sessionId : 'probe'));
      try {
        await fn.apply(client, args);
        outcomes[name] = 'ok';
      } catch (err) {
        outcomes[name] = err instanceof DaemonHttpError ? `http ${err.status}` : `${(err as Error).name}: ${(err as Error).message.slice(0, 80)}`;
      }
    }
    const parseErrors = Object.entries(outcomes).filter(([, o]) => /SyntaxError|JSON|Unexpected token/.test(o));
    expect(parseErrors).toEqual([]);
    // Anything else that failed is an HTTP answer or the client's own argument check.
    const unexplained = Object.entries(outcomes).filter(([, o]) => o !== 'ok' && !o.startsWith('http ') && !CLIENT_SIDE.test(o));
    expect(unexplained).toEqual([]);
    const notFound = Object.values(outcomes).filter((o) => o === 'http 404').length;
    expect(notFound).toBeGreaterThan(150);
    // qwen's newer surfaces in particular (they fell through to the app's HTML before).
    for (const name of ['workspaceExtensions', 'workspacePathSuggestions', 'extensionCatalog']) expect(outcomes[name], name).toBe('http 404');
  }, 120_000);

  it('status, heartbeat and pending prompts answer with qwen serve 0.24.4 shapes', async () => {
    app = mkdtempSync(join(tmpdir(), 'qwen-app-'));
    server = await startTestServer({ withAuth: true });
    const client = new DaemonClient({ baseUrl: server.url, token: TOKENS.alice });
    const { sessionId } = await client.createOrAttachSession({} as never);
    const idle = await client.sessionStatus(sessionId);
    expect(idle).toMatchObject({ sessionId, hasActivePrompt: false, activeWorkState: 'idle', isWaitingForPermission: false, isWaitingForUserQuestion: false, pendingInteractionCount: 0, hasTurnError: false, clientCount: 0 });
    expect(typeof idle.createdAt).toBe('string');
    const beat = await client.heartbeat(sessionId, 'qwen-cli-1');
    expect(beat).toMatchObject({ sessionId, clientId: 'qwen-cli-1' });
    expect(Number.isInteger(beat.lastSeenAt)).toBe(true);
    expect(await client.getPendingPrompts(sessionId)).toEqual({ pendingPrompts: [] });

    // A turn waiting on a permission, and a second prompt queued behind it.
    const tool = { tool: { id: 'tool-1', name: 'write_file', input: { path: 'a.md' }, confirm: true } };
    const first = await client.promptNonBlocking(sessionId, { prompt: [{ type: 'text', text: JSON.stringify({ script: [tool] }) }] } as never);
    const second = await client.promptNonBlocking(sessionId, { prompt: [{ type: 'text', text: 'hello' }] } as never);
    const waiting = await waitFor(
      async () => {
        const s = await client.sessionStatus(sessionId);
        return s.isWaitingForPermission ? s : undefined;
      },
      { what: 'status waiting for permission' },
    );
    expect(waiting).toMatchObject({ hasActivePrompt: true, activeWorkState: 'active', pendingInteractionCount: 1 });
    const pending = (await client.getPendingPrompts(sessionId)).pendingPrompts;
    expect(pending.map((p) => [p.promptId, p.state, p.text])).toEqual([
      [first.promptId, 'running', JSON.stringify({ script: [tool] })],
      [second.promptId, 'queued', 'hello'],
    ]);
    for (const p of pending) expect(Number.isInteger(p.queuedAt)).toBe(true);
    // Unknown sessions are qwen's 404s.
    await expect(client.sessionStatus('no-such-session')).rejects.toMatchObject({ status: 404 });
    await expect(client.heartbeat('no-such-session')).rejects.toBeInstanceOf(DaemonHttpError);
  });
});

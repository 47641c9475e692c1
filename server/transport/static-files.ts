/**
 * Serves the built browser app. Only files that exist under the app directory are served; paths
 * are resolved and checked to stay inside it. Unknown paths without an extension fall back to
 * index.html only for the app's own client-side routes (`/`, `/s/<session>`). The service worker
 * (`/sw.js`) and the page are revalidated on every load (`no-cache`), so a new build reaches an
 * installed app on its next start; the worker may control the whole origin (`Service-Worker-Allowed`).
 */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { extname, join, resolve, sep } from 'node:path';
import { startOk } from './http-reply.js';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.webmanifest': 'application/manifest+json; charset=utf-8',
};

/** Files a browser must revalidate before using a cached copy (the worker's own script and the page). */
const REVALIDATE = new Set(['sw.js', 'index.html', 'manifest.webmanifest']);

export async function serveStatic(root: string, req: IncomingMessage, res: ServerResponse): Promise<boolean> {
  const base = resolve(root);
  let pathname: string;
  try {
    pathname = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
  } catch {
    return false;
  }
  // Source maps would publish the app's source; the build keeps them out of the served directory
  // and this keeps them unserved should one be copied in.
  if (extname(pathname) === '.map') return false;
  let file = resolve(join(base, pathname));
  if (file !== base && !file.startsWith(base + sep)) return false;
  let info = await stat(file).catch(() => undefined);
  if (info?.isDirectory()) {
    file = join(file, 'index.html');
    info = await stat(file).catch(() => undefined);
  }
  // Only the app's own client-side routes fall back to the page; any other unknown path is the
  // server's JSON 404, so API clients (qwen's DaemonClient) never parse HTML.
  if (!info && isAppRoute(pathname)) {
    file = join(base, 'index.html');
    info = await stat(file).catch(() => undefined);
  }
  if (!info?.isFile()) return false;
  const name = file.slice(base.length + 1);
  startOk(res, {
    'content-type': TYPES[extname(file)] ?? 'application/octet-stream',
    'content-length': info.size,
    ...(REVALIDATE.has(name) && { 'cache-control': 'no-cache' }),
    ...(name === 'sw.js' && { 'service-worker-allowed': '/' }),
    'x-content-type-options': 'nosniff',
    // The app renders agent text; a strict CSP is a second line of defence against injected markup.
    'content-security-policy': "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self' ws: wss:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'",
  });
  createReadStream(file).pipe(res);
  return true;
}

/** The app's client-side routes (see app/main.ts): the dashboard and a session page. */
function isAppRoute(pathname: string): boolean {
  return pathname === '/' || /^\/s\/[^/]+\/?$/.test(pathname);
}

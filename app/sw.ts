/**
 * The app's service worker, served at `/sw.js` for the whole origin (scope `/`). Two jobs:
 *
 * - **The app shell offline.** At install it stores one build's shell (the page, its script, CSS,
 *   icons, manifest) in a cache named after the build (`SHELL_VERSION`, a hash of those files,
 *   set by scripts/build-app.mjs), and removes older builds' caches on activate. Shell requests go
 *   to the network first and fall back to that cache when the hub cannot be reached (or a proxy in
 *   front of it answers 5xx); the app then shows its reconnecting state and retries. API, SSE,
 *   exports and WebSocket traffic are never touched, let alone cached.
 * - **Push.** A `request` push shows a notification (tag `chat:<chat uri>`: a chat's requests
 *   collapse into one); a `resolved` push closes the notifications of its tag. Approve / Deny answer
 *   through `POST /api/push/actions` with the push's one-request token; a click on the
 *   notification opens (or focuses) the chat at the request.
 */
import { clickTarget, isAppRoute, type NotificationData, parsePushPayload, type PushRequest } from './push-payload.js';

declare const self: ServiceWorkerGlobalScope;
/** Set at build time (esbuild `define`). */
declare const SHELL_VERSION: string;
declare const SHELL_FILES: string[];

const CACHE_PREFIX = 'ahp-hub-shell-';
const CACHE = CACHE_PREFIX + SHELL_VERSION;
const SHELL = new Set(SHELL_FILES);

/** NotificationOptions as browsers take them; TypeScript's lib leaves out actions and renotify. */
interface ShowOptions extends NotificationOptions {
  actions?: Array<{ action: string; title: string }>;
  renotify?: boolean;
}

self.addEventListener('install', (event) => {
  event.waitUntil(
    (async () => {
      const cache = await caches.open(CACHE);
      // `reload`: straight from the hub, never an HTTP-cached copy of an older build.
      await cache.addAll([...SHELL].map((path) => new Request(path, { cache: 'reload' })));
      await self.skipWaiting();
    })(),
  );
});

self.addEventListener('activate', (event) => {
  event.waitUntil(
    (async () => {
      for (const name of await caches.keys()) if (name.startsWith(CACHE_PREFIX) && name !== CACHE) await caches.delete(name);
      await self.clients.claim();
    })(),
  );
});

self.addEventListener('fetch', (event) => {
  const request = event.request;
  if (request.method !== 'GET') return;
  const url = new URL(request.url);
  if (url.origin !== self.location.origin) return;
  // Every app route is the one page; the query (a `?token=` link, a chat) is not part of the key.
  const key = request.mode === 'navigate' && isAppRoute(url.pathname) ? '/index.html' : SHELL.has(url.pathname) ? url.pathname : undefined;
  if (key === undefined) return;
  event.respondWith(networkFirst(request, key));
});

async function networkFirst(request: Request, key: string): Promise<Response> {
  try {
    const response = await fetch(request);
    if (response.status < 500) return response;
    return (await caches.match(key, { cacheName: CACHE })) ?? response;
  } catch (err) {
    const cached = await caches.match(key, { cacheName: CACHE });
    if (cached) return cached;
    throw err;
  }
}

self.addEventListener('push', (event) => {
  event.waitUntil(onPush(event.data?.text()));
});

async function onPush(text: string | undefined): Promise<void> {
  const parsed = parsePushPayload(text);
  if (!parsed.ok) {
    // A push must show something (userVisibleOnly); say what arrived rather than nothing.
    await self.registration.showNotification('AHP Hub', {
      body: `A notification from the hub could not be read (${parsed.reason}). Open the app to see what needs you.`,
      icon: '/icon-192.png',
      data: { url: '/', actionToken: undefined } satisfies NotificationData,
    });
    return;
  }
  const p = parsed.payload;
  if (p.kind === 'resolved') {
    // Only the request it names: a push service keeps no order, and the chat's tag may already
    // show a newer request when an older one's withdrawal arrives.
    for (const n of await self.registration.getNotifications({ tag: p.tag })) {
      const shown = readData(n.data).requestId;
      if (p.requestId === undefined || shown === undefined || shown === p.requestId) n.close();
    }
    return;
  }
  await show(p);
}

function show(p: PushRequest): Promise<void> {
  const options: ShowOptions = {
    body: p.body,
    tag: p.tag,
    // A newer request of the same chat replaces the notification and alerts again.
    renotify: true,
    requireInteraction: true,
    icon: '/icon-192.png',
    data: { url: p.url, actionToken: p.actionToken, requestId: p.requestId || undefined } satisfies NotificationData,
    actions: p.actions.map((a) => ({ action: a.action, title: a.title })),
  };
  return self.registration.showNotification(p.title, options);
}

// The push service ended this subscription: subscribe again with the same key. The worker holds
// no sign-in, so the app registers the new subscription at the hub on its next start
// (app/push-toggle.ts); until then the hub's pushes to the old one fail and it drops that one.
self.addEventListener('pushsubscriptionchange', (event) => {
  const options = event.oldSubscription?.options;
  if (options?.applicationServerKey) event.waitUntil(self.registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: options.applicationServerKey }).then(() => undefined));
});

self.addEventListener('notificationclick', (event) => {
  const notification = event.notification;
  const data = readData(notification.data);
  notification.close();
  if ((event.action === 'approve' || event.action === 'deny') && data.actionToken) event.waitUntil(answer(notification, data, event.action));
  else event.waitUntil(openChat(data.url));
});

function readData(data: unknown): NotificationData {
  const o = (typeof data === 'object' && data !== null ? data : {}) as Record<string, unknown>;
  const str = (k: string) => (typeof o[k] === 'string' ? (o[k] as string) : undefined);
  return { url: str('url') ?? '/', actionToken: str('actionToken'), requestId: str('requestId') };
}

/** Approve or Deny from the notification; a refusal is shown, never dropped. */
async function answer(notification: Notification, data: NotificationData, action: 'approve' | 'deny'): Promise<void> {
  let problem: string | undefined;
  try {
    const res = await fetch('/api/push/actions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: data.actionToken, action }) });
    if (!res.ok) {
      const body = (await res.json().catch(() => ({}))) as { message?: unknown };
      problem = typeof body.message === 'string' ? body.message : `the hub answered ${res.status}`;
    }
  } catch {
    problem = 'the hub cannot be reached';
  }
  if (problem === undefined) return;
  await self.registration.showNotification(notification.title, {
    body: `Not ${action === 'approve' ? 'approved' : 'denied'}: ${problem}. Open the chat to answer there.`,
    tag: notification.tag,
    icon: '/icon-192.png',
    data: { url: data.url, actionToken: undefined, requestId: data.requestId } satisfies NotificationData,
  });
}

async function openChat(url: string): Promise<void> {
  const target = clickTarget(url, self.location.origin);
  const wanted = new URL(target);
  const windows = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
  const open = windows.find((c) => {
    const u = new URL(c.url);
    return u.pathname === wanted.pathname && u.search === wanted.search;
  });
  if (open) await open.focus();
  else await self.clients.openWindow(target);
}

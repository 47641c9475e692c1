/**
 * Registers the app's service worker (`/sw.js`, app/sw.ts) for the whole origin: it keeps the app
 * shell for offline starts and shows push notifications. Browsers allow service workers only in a
 * secure context (HTTPS, or a loopback address such as 127.0.0.1 or localhost); elsewhere the app
 * works as before, without either, and `workerUnavailable()` says why.
 */

let registration: Promise<ServiceWorkerRegistration> | undefined;

/** Why this page cannot have a service worker, or undefined when it can. */
export function workerUnavailable(): string | undefined {
  if (!window.isSecureContext) return `this page is not in a secure context (${location.protocol}//${location.host}): open the hub over HTTPS, or at 127.0.0.1 / localhost on this machine`;
  if (!('serviceWorker' in navigator)) return 'this browser has no service workers (a private window may disable them)';
  return undefined;
}

/** Starts the registration once (at app start); a failure is logged, the app runs on without it. */
export function registerServiceWorker(): void {
  if (registration || workerUnavailable() !== undefined) return;
  registration = navigator.serviceWorker.register('/sw.js', { scope: '/' });
  registration.catch((err: unknown) => console.warn('service worker not registered:', err));
}

/** The active registration (waits for it to activate), or a rejection saying why there is none. */
export async function workerRegistration(): Promise<ServiceWorkerRegistration> {
  const why = workerUnavailable();
  if (why !== undefined) throw new Error(why);
  registerServiceWorker();
  await registration;
  return navigator.serviceWorker.ready;
}

/**
 * The header's "Notifications on this device" switch, the one switch for notifications. On:
 * with Web Push available (a service worker, `PushManager`) this device subscribes with the
 * hub's VAPID key (`GET /api/push/key`, `userVisibleOnly`) and registers the subscription
 * (`POST /api/push/subscriptions`, its id kept in this browser), so notifications arrive with the
 * app closed; off unsubscribes and deletes it at the hub. Where push is not available (plain
 * http away from loopback, no PushManager, a hub without push, a push service that refuses) the
 * switch says why and falls back to the tab notifications of app/attention.ts, shown only while a
 * tab of the app is open. Per device: the choice lives in this browser's localStorage.
 */
import { ApiError, type ApiAuth, apiRequest } from './api.js';
import { NOTIFY_KEY } from './attention.js';
import { el } from './dom.js';
import { workerRegistration, workerUnavailable } from './sw-register.js';

const SUBSCRIPTION_KEY = 'ahp-hub-push-subscription';
const LABEL = 'Notifications on this device';

type Mode = 'off' | 'push' | 'tab';

interface Stored {
  id: string;
  endpoint: string;
}

function read(key: string): string | null {
  try {
    return localStorage.getItem(key);
  } catch {
    return null;
  }
}

function write(key: string, value: string | undefined): void {
  try {
    if (value === undefined) localStorage.removeItem(key);
    else localStorage.setItem(key, value);
  } catch {
    // storage disabled: the choice lasts as long as the page
  }
}

function storedSubscription(): Stored | undefined {
  try {
    const s = JSON.parse(read(SUBSCRIPTION_KEY) ?? 'null') as Partial<Stored> | null;
    return typeof s?.id === 'string' && typeof s.endpoint === 'string' ? { id: s.id, endpoint: s.endpoint } : undefined;
  } catch {
    return undefined;
  }
}

function currentMode(): Mode {
  if (typeof Notification === 'undefined' || Notification.permission !== 'granted') return 'off';
  const v = read(NOTIFY_KEY);
  return v === 'push' ? 'push' : v === 'on' ? 'tab' : 'off';
}

/** Why this page cannot get Web Push, or undefined when it can try. */
export function pushUnavailable(): string | undefined {
  return workerUnavailable() ?? ('PushManager' in window ? undefined : 'this browser has no Web Push (PushManager)');
}

function keyBytes(base64url: string): Uint8Array<ArrayBuffer> {
  const b64 = base64url.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (base64url.length % 4)) % 4);
  const bin = atob(b64);
  const out = new Uint8Array(new ArrayBuffer(bin.length));
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** Subscribes this device at the push service and registers it at the hub; throws a readable reason. */
async function subscribeDevice(auth: ApiAuth): Promise<void> {
  const registration = await workerRegistration();
  let publicKey: unknown;
  try {
    publicKey = ((await (await apiRequest(auth, 'GET', '/api/push/key')).json()) as { publicKey?: unknown }).publicKey;
  } catch (err) {
    throw new Error(`the hub gave no push key (${err instanceof Error ? err.message : String(err)})`);
  }
  if (typeof publicKey !== 'string' || publicKey === '') throw new Error('the hub gave no push key');
  // A subscription made with another key (an older hub's) cannot be reused: subscribe afresh.
  await (await registration.pushManager.getSubscription())?.unsubscribe();
  let subscription: PushSubscription;
  try {
    subscription = await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: keyBytes(publicKey) });
  } catch (err) {
    throw new Error(`the browser's push service refused (${err instanceof Error ? err.message : String(err)})`);
  }
  try {
    await registerAtHub(auth, subscription);
  } catch (err) {
    await subscription.unsubscribe().catch(() => false);
    throw new Error(`the hub did not take the subscription (${err instanceof Error ? err.message : String(err)})`);
  }
}

/** `POST /api/push/subscriptions`; the id the hub gives is kept in this browser. */
async function registerAtHub(auth: ApiAuth, subscription: PushSubscription): Promise<void> {
  const { id } = (await (await apiRequest(auth, 'POST', '/api/push/subscriptions', subscription.toJSON())).json()) as { id?: unknown };
  if (typeof id !== 'string') throw new Error('the hub answered without an id');
  write(SUBSCRIPTION_KEY, JSON.stringify({ id, endpoint: subscription.endpoint } satisfies Stored));
}

/** Unsubscribes this device; resolves with a note when the hub could not be told. */
async function unsubscribeDevice(auth: ApiAuth): Promise<string | undefined> {
  const stored = storedSubscription();
  write(SUBSCRIPTION_KEY, undefined);
  const registration = await navigator.serviceWorker?.getRegistration('/').catch(() => undefined);
  await (await registration?.pushManager.getSubscription())?.unsubscribe().catch(() => false);
  if (!stored) return undefined;
  try {
    await apiRequest(auth, 'DELETE', `/api/push/subscriptions/${encodeURIComponent(stored.id)}`);
    return undefined;
  } catch (err) {
    // Gone already is what we wanted.
    if (err instanceof ApiError && err.status === 404) return undefined;
    return `Turned off here, but the hub could not be told (${err instanceof Error ? err.message : String(err)}); it forgets this device at its next notification.`;
  }
}

/** The switch and the note beside it (`role=status`), for the header. */
export function pushToggle(auth: ApiAuth): { button: HTMLButtonElement; note: HTMLElement } {
  const note = el('div', { class: 'banner banner-info', attrs: { 'data-testid': 'notify-note', role: 'status', hidden: 'hidden' } });
  const say = (text: string | undefined): void => {
    note.textContent = text ?? '';
    note.hidden = !text;
  };
  const button = el(
    'button',
    {
      class: 'link small notify',
      attrs: { type: 'button', 'data-testid': 'notify-toggle', 'aria-pressed': 'false', 'aria-label': LABEL },
      title: 'Get a notification on this device when a session needs you',
    },
    el('span', { class: 'notify-bell', attrs: { 'aria-hidden': 'true' }, text: '🔔 ' }),
    el('span', { class: 'notify-label', text: LABEL }),
  );
  const show = (mode: Mode): void => {
    button.setAttribute('aria-pressed', String(mode !== 'off'));
    button.dataset['mode'] = mode;
  };
  show(currentMode());
  let busy = false;
  button.addEventListener('click', () => {
    if (busy) return;
    busy = true;
    button.setAttribute('aria-busy', 'true');
    void flip(auth, say)
      .then(show)
      .finally(() => {
        busy = false;
        button.removeAttribute('aria-busy');
      });
  });
  // The browser may have dropped the subscription (site data cleared, permission revoked) or
  // renewed it.
  if (currentMode() === 'push') {
    void navigator.serviceWorker
      ?.getRegistration('/')
      .then((r) => r?.pushManager.getSubscription())
      .then(async (s) => {
        const stored = storedSubscription();
        if (s && s.endpoint === stored?.endpoint) return;
        if (s) {
          // The push service renewed it (the worker resubscribed on pushsubscriptionchange):
          // register the new one and drop the old one at the hub.
          await registerAtHub(auth, s);
          if (stored) await apiRequest(auth, 'DELETE', `/api/push/subscriptions/${encodeURIComponent(stored.id)}`).catch(() => undefined);
          return;
        }
        write(NOTIFY_KEY, undefined);
        write(SUBSCRIPTION_KEY, undefined);
        show('off');
        say('Notifications on this device were switched off by the browser. Turn them on again to get them.');
      })
      .catch(() => undefined);
  }
  return { button, note };
}

async function flip(auth: ApiAuth, say: (text: string | undefined) => void): Promise<Mode> {
  const mode = currentMode();
  if (mode !== 'off') {
    write(NOTIFY_KEY, undefined);
    say(mode === 'push' ? await unsubscribeDevice(auth) : undefined);
    return 'off';
  }
  // Browsers refuse notifications of any kind to an insecure page: say so before asking.
  if (!window.isSecureContext) {
    say(`Notifications are not available: ${workerUnavailable()}.`);
    return 'off';
  }
  if (typeof Notification === 'undefined') {
    say('This browser cannot show notifications for this page. On an iPhone or iPad, add the app to the home screen first (Share → Add to Home Screen), then turn them on there.');
    return 'off';
  }
  const permission = Notification.permission === 'granted' ? 'granted' : await Notification.requestPermission();
  if (permission !== 'granted') {
    // A browser that blocks notifications answers nothing visible: say so, and how to allow them.
    say(
      permission === 'denied'
        ? 'Your browser blocks notifications for this site. Allow them in the site settings (the icon left of the address), then turn them on again.'
        : 'Notifications were not allowed. Turn them on again and choose Allow when the browser asks.',
    );
    return 'off';
  }
  const why = pushUnavailable();
  if (why === undefined) {
    try {
      await subscribeDevice(auth);
      write(NOTIFY_KEY, 'push');
      say('This device now gets a notification when a session needs you, also with the app closed.');
      return 'push';
    } catch (err) {
      return tabOnly(err instanceof Error ? err.message : String(err), say);
    }
  }
  return tabOnly(why, say);
}

function tabOnly(why: string, say: (text: string | undefined) => void): Mode {
  write(NOTIFY_KEY, 'on');
  say(`Push notifications are not available: ${why}. Until then you are notified only while a tab of the app is open.`);
  return 'tab';
}

/** At sign-out: this device stops getting the signed-in person's notifications. */
export async function pushSignOut(auth: ApiAuth): Promise<void> {
  const mode = currentMode();
  write(NOTIFY_KEY, undefined);
  if (mode === 'push') await unsubscribeDevice(auth).catch(() => undefined);
}

/**
 * The browser app served by the hub at `/`: a live dashboard of the tenant's sessions and a chat
 * view where several tabs answer one agent together. Everything talks to the hub through the
 * shared AhpClient SDK over `/ahp`; routes are `/` (dashboard) and `/s/<sessionId>?chat=<uri>`.
 */
import { AhpClient, type ConnectionState } from '../shared/client/ahp-client.js';
import { forgetToken, signInForm, takeToken } from './auth.js';
import { el } from './dom.js';
import { DashboardView } from './dashboard.js';
import { ChatPage } from './chat-view.js';

export interface AppContext {
  readonly client: AhpClient;
  readonly user: string;
  readonly role: string;
  readonly canWrite: boolean;
  navigate(path: string): void;
}

interface View {
  readonly el: HTMLElement;
  destroy(): void;
}

const root = document.getElementById('app')!;

function wsUrl(): string {
  return `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/ahp`;
}

async function connect(token: string | undefined): Promise<AhpClient> {
  const client = new AhpClient({
    url: wsUrl(),
    createSocket: (url) => new WebSocket(url),
    clientInfo: { name: 'ahp-hub-web', version: '0.1.0' },
    reconnect: { initialDelayMs: 250, maxDelayMs: 5_000 },
    requestTimeoutMs: 15_000,
    ...(token !== undefined && { token }),
  });
  await client.connect();
  return client;
}

async function start(): Promise<void> {
  let token = takeToken();
  let problem: string | undefined;
  let client: AhpClient | undefined;
  for (;;) {
    try {
      client = await connect(token);
      break;
    } catch {
      if (token !== undefined) forgetToken();
      problem = token === undefined ? undefined : 'The hub refused that token (or is unreachable). Check it and try again.';
      token = await signInForm(root, problem);
    }
  }
  const principal = (client.initializeResult?._meta?.['hub/principal'] ?? {}) as { user?: string; role?: string };
  const user = principal.user ?? 'me';
  const role = principal.role ?? 'user';
  shell(client, user, role);
}

function shell(client: AhpClient, user: string, role: string): void {
  const conn = el('span', { class: 'conn conn-open', attrs: { 'data-testid': 'connection', role: 'status', 'aria-live': 'polite' }, text: 'Connected' });
  const banner = el('div', { class: 'banner', attrs: { hidden: 'hidden', role: 'alert' } });
  const viewHost = el('main', { attrs: { id: 'view' } });
  const header = el(
    'header',
    { class: 'topbar' },
    el('a', { class: 'brand', attrs: { href: '/', 'data-route': '' }, text: 'AHP Hub' }),
    el('span', { class: 'spacer' }),
    conn,
    el('span', { class: 'me', attrs: { 'data-testid': 'me' }, text: `${user} · ${role}` }),
    el('button', { class: 'link', text: 'Sign out', on: { click: () => {
      forgetToken();
      client.close();
      location.href = '/';
    } } }),
  );
  root.replaceChildren(header, banner, viewHost);

  let lost = false;
  let bannerTimer: number | undefined;
  client.onConnectionState((state: ConnectionState) => {
    conn.className = `conn conn-${state}`;
    conn.textContent = state === 'open' ? 'Connected' : state === 'reconnecting' || state === 'connecting' ? 'Reconnecting…' : 'Offline';
    window.clearTimeout(bannerTimer);
    if (state === 'reconnecting') {
      lost = true;
      banner.className = 'banner banner-warn';
      banner.textContent = 'Connection to the hub lost — reconnecting automatically. Your changes are kept and sent when it is back.';
      banner.hidden = false;
    } else if (state === 'open' && lost) {
      lost = false;
      banner.className = 'banner banner-ok';
      banner.textContent = 'Reconnected — everything is up to date.';
      banner.hidden = false;
      bannerTimer = window.setTimeout(() => (banner.hidden = true), 4_000);
    } else if (state === 'closed') {
      banner.className = 'banner banner-error';
      banner.textContent = 'Disconnected from the hub. Reload the page to reconnect.';
      banner.hidden = false;
    }
  });

  let current: View | undefined;
  const ctx: AppContext = {
    client,
    user,
    role,
    canWrite: role !== 'viewer',
    navigate: (path) => {
      history.pushState(null, '', path);
      render();
    },
  };
  const render = (): void => {
    current?.destroy();
    const path = location.pathname;
    const m = /^\/s\/([^/]+)\/?$/.exec(path);
    if (m) {
      const session = 'ahp-session:/' + decodeURIComponent(m[1]!);
      const chat = new URLSearchParams(location.search).get('chat') ?? undefined;
      current = new ChatPage(ctx, session, chat);
    } else {
      current = new DashboardView(ctx);
    }
    viewHost.replaceChildren(current.el);
  };
  document.addEventListener('click', (e) => {
    const a = (e.target as Element | null)?.closest?.('a[data-route]');
    if (!a || e.defaultPrevented || (e as MouseEvent).button !== 0 || (e as MouseEvent).metaKey || (e as MouseEvent).ctrlKey) return;
    e.preventDefault();
    ctx.navigate(a.getAttribute('href') ?? '/');
  });
  window.addEventListener('popstate', render);
  render();
}

void start();

/**
 * The browser app served by the hub at `/`: a live dashboard of the tenant's sessions and a chat
 * view where several tabs answer one agent together. Everything talks to the hub through the
 * shared AhpClient SDK over `/ahp`; routes are `/` (dashboard), `/s/<sessionId>?chat=<uri>` and `/#/audit` (approvals and standing grants).
 */
import { AhpAuthError, AhpClient, type ConnectionState } from '../shared/client/ahp-client.js';
import { SUPPORTED_VERSIONS } from '../shared/protocol/version.js';
import { AHP_1_1 } from '../shared/protocol/version-features.js';
import { devTabName, forgetToken, signInForm, signInProblem, takeToken } from './auth.js';
import { providerSignIn, signInStatus, signOutSession } from './sign-in.js';
import { el } from './dom.js';
import { DashboardView } from './dashboard.js';
import { ChatPage } from './chat-page.js';
import { AuditPage } from './audit-page.js';

/** The audit page's route (a hash, so the server needs no route of its own). */
const AUDIT_HASH = '#/audit';
import { Attention } from './attention.js';
import type { AppContext } from './context.js';
import { applyTheme, storedTheme, themePicker } from './theme.js';
import { installCodeCopy } from './code-copy.js';
import { connectOrWait } from './hub-wait.js';
import { registerServiceWorker } from './sw-register.js';
import { pushSignOut, pushToggle } from './push-toggle.js';

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
    // The default transport: the browser's WebSocket to this URL.
    url: wsUrl(),
    clientInfo: { name: 'ahp-hub-web', version: '0.1.0' },
    // The app only talks to this hub: 1.1 gives it per-channel reconnect.
    protocolVersions: [AHP_1_1, ...SUPPORTED_VERSIONS],
    reconnect: { initialDelayMs: 250, maxDelayMs: 5_000 },
    requestTimeoutMs: 15_000,
    ...(token !== undefined && { token }),
  });
  await client.connect();
  return client;
}

async function start(): Promise<void> {
  let token = takeToken();
  // A session cookie (sign-in with the identity provider) signs the socket in without a token.
  const status = await signInStatus();
  let problem: string | undefined;
  let client: AhpClient | undefined;
  for (;;) {
    try {
      // The hub down (an installed app opened offline): the reconnecting page until it answers.
      client = await connectOrWait(root, () => connect(token));
      break;
    } catch (err) {
      problem = signInProblem(err, token !== undefined);
      if (err instanceof AhpAuthError) forgetToken();
      token = await signInForm(root, problem, status.oidc ? providerSignIn() : undefined);
    }
  }
  const principal = (client.initializeResult?._meta?.['hub/principal'] ?? {}) as { user?: string; role?: string };
  const session = token === undefined && status.signedIn;
  const devMode = token === undefined && !session;
  const user = devMode ? devTabName() : (principal.user ?? 'me');
  const role = principal.role ?? 'user';
  shell(client, { user, signedInAs: principal.user ?? user, role, devMode, token, session });
}

function shell(client: AhpClient, who: { user: string; signedInAs: string; role: string; devMode: boolean; token: string | undefined; session: boolean }): void {
  const { user, role, devMode } = who;
  const attention = new Attention(client);
  const canWrite = role !== 'viewer';
  const { button: bell, note: bellNote } = pushToggle({ token: who.token });
  const conn = el('span', { class: 'conn conn-open', attrs: { 'data-testid': 'connection', role: 'status', 'aria-live': 'polite' }, text: 'Connected' });
  const banner = el('div', { class: 'banner', attrs: { hidden: 'hidden', role: 'alert' } });
  const viewHost = el('main', { attrs: { id: 'view' } });
  const header = el(
    'header',
    { class: 'topbar' },
    el('a', { class: 'brand', attrs: { href: '/', 'data-route': '' }, text: 'AHP Hub' }),
    el('span', { class: 'spacer' }),
    el('a', { class: 'nav-link small', attrs: { href: `/${AUDIT_HASH}`, 'data-route': '', 'data-testid': 'audit-link' }, text: 'Audit' }),
    conn,
    themePicker(),
    bell,
    el(
      'span',
      { class: 'me', attrs: { 'data-testid': 'me' }, title: devMode ? 'Dev mode: each tab gets its own name so presence can be tried locally' : undefined },
      user,
      el('span', { class: 'role', text: devMode ? ' · dev mode' : ` · ${role}` }),
    ),
    // Without a token there is nothing to sign out of.
    devMode
      ? null
      : el('button', {
          class: 'link',
          attrs: { 'data-testid': 'sign-out' },
          text: 'Sign out',
          on: {
            // This device's push subscription is the signed-in person's: it ends with the sign-in.
            click: () =>
              void pushSignOut({ token: who.token }).finally(() => {
                forgetToken();
                client.close();
                if (who.session) void signOutSession();
                else location.href = '/';
              }),
          },
        }),
  );
  const readOnly = canWrite ? null : el('div', { class: 'banner banner-info', attrs: { 'data-testid': 'read-only', role: 'note' }, text: 'Read-only access: you can follow every session live, but not send, answer or create anything.' });
  root.replaceChildren(header, readOnly ?? '', bellNote, banner, viewHost);

  let lost = false;
  let bannerTimer: number | undefined;
  client.onConnectionState((state: ConnectionState) => {
    conn.className = `conn conn-${state}`;
    conn.textContent = state === 'open' ? 'Connected' : state === 'reconnecting' || state === 'connecting' ? 'Reconnecting…' : 'Offline';
    window.clearTimeout(bannerTimer);
    if (state === 'reconnecting') {
      lost = true;
      banner.className = 'banner banner-warn';
      banner.textContent = 'Connection to the hub lost — reconnecting automatically. What you type is kept here and sent when it is back; anything the hub does not take is marked “Not delivered” with a Resend button.';
      banner.hidden = false;
    } else if (state === 'open' && lost) {
      // A role changed at the identity provider comes back with the reconnect: draw the app for it.
      if (((client.initializeResult?._meta?.['hub/principal'] ?? {}) as { role?: string }).role !== role && who.session) return location.reload();
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
    signedInAs: who.signedInAs,
    role,
    canWrite,
    devMode,
    token: who.token,
    attention,
    navigate: (path) => {
      history.pushState(null, '', path);
      render();
    },
    setPageTitle: (title) => attention.setBaseTitle(`${title} · AHP Hub`),
  };
  const render = (): void => {
    current?.destroy();
    const path = location.pathname;
    const m = /^\/s\/([^/]+)\/?$/.exec(path);
    if (location.hash === AUDIT_HASH) {
      current = new AuditPage(ctx);
    } else if (m) {
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
  window.addEventListener('hashchange', render);
  render();
}

// Before anything is drawn (the sign-in form too): the remembered theme, and the code blocks' Copy.
applyTheme(storedTheme());
installCodeCopy(document);
registerServiceWorker();
void start();

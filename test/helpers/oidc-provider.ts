/**
 * A real OpenID provider in process (`oidc-provider`), never a mock of the protocol: its own
 * discovery, JWKS, authorization (with its development login and consent pages), token and
 * end-session endpoints. The hub's client uses the code flow with PKCE; access tokens are JWTs
 * for a resource whose audience is the client id (resource indicators), carrying `tenant` and
 * `role` claims from the test's accounts. It listens first (so its issuer is known to the hub),
 * and takes its client's redirect URI once the hub listens (`configure`).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair } from 'jose';
import Provider, { type KoaContextWithOIDC } from 'oidc-provider';

export const CLIENT_ID = 'ahp-hub';
export const CLIENT_SECRET = 'a-client-secret-for-the-tests-0123456789';
export const RESOURCE = 'urn:ahp-hub:api';

export interface TestAccount {
  tenant?: string;
  role?: string;
}

export interface IdpOptions {
  /** Where the hub answers (its `/auth/callback` is the redirect URI). */
  readonly hubUrl: string;
  readonly accounts: Record<string, TestAccount>;
  /** Access token lifetime (s); default 300. */
  readonly accessTokenTtl?: number;
}

export class TestIdp {
  #provider: Provider | undefined;
  #accounts: Record<string, TestAccount> = {};

  private constructor(
    private readonly server: Server,
    readonly issuer: string,
  ) {}

  static async listen(): Promise<TestIdp> {
    let handler: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
    const server = createServer((req, res) => {
      if (handler) return handler(req, res);
      res.writeHead(503).end('not configured yet');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const idp = new TestIdp(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    idp.#attach = (h) => (handler = h);
    return idp;
  }

  #attach: (h: (req: IncomingMessage, res: ServerResponse) => void) => void = () => undefined;

  get provider(): Provider {
    if (!this.#provider) throw new Error('TestIdp not configured');
    return this.#provider;
  }

  /** Changes an account's claims (a role changed, a user removed) for tokens issued from now on. */
  setAccount(id: string, account: TestAccount | undefined): void {
    if (account) this.#accounts[id] = account;
    else delete this.#accounts[id];
  }

  async configure(options: IdpOptions): Promise<void> {
    this.#accounts = { ...options.accounts };
    const { privateKey } = await generateKeyPair('RS256', { extractable: true });
    const jwk = { ...(await exportJWK(privateKey)), alg: 'RS256', use: 'sig', kid: 'test-key-1' };
    const ttl = options.accessTokenTtl ?? 300;
    const accounts = (): Record<string, TestAccount> => this.#accounts;
    const provider = new Provider(this.issuer, {
      clients: [
        {
          client_id: CLIENT_ID,
          client_secret: CLIENT_SECRET,
          redirect_uris: [`${options.hubUrl}/auth/callback`],
          post_logout_redirect_uris: [`${options.hubUrl}/`],
          grant_types: ['authorization_code', 'refresh_token'],
          response_types: ['code'],
          token_endpoint_auth_method: 'client_secret_basic',
        },
      ],
      jwks: { keys: [jwk] },
      cookies: { keys: ['a-cookie-key-for-the-test-provider'] },
      pkce: { required: () => true },
      scopes: ['openid', 'offline_access', 'profile'],
      claims: { openid: ['sub'], profile: ['name'] },
      ttl: { AccessToken: ttl, IdToken: 300, RefreshToken: 3600, Grant: 3600, Session: 3600, Interaction: 600, AuthorizationCode: 60 },
      features: {
        devInteractions: { enabled: true },
        rpInitiatedLogout: { enabled: true },
        resourceIndicators: {
          enabled: true,
          defaultResource: () => RESOURCE,
          useGrantedResource: () => true,
          getResourceServerInfo: () => ({ scope: 'openid offline_access profile', audience: CLIENT_ID, accessTokenFormat: 'jwt', accessTokenTTL: ttl }),
        },
      },
      findAccount: (_ctx: KoaContextWithOIDC, sub: string) => (accounts()[sub] ? { accountId: sub, claims: () => ({ sub, name: sub }) } : undefined),
      extraTokenClaims: (_ctx: KoaContextWithOIDC, token: { accountId?: string }) => {
        const account = token.accountId ? accounts()[token.accountId] : undefined;
        return account ? { ...(account.tenant ? { tenant: account.tenant } : {}), ...(account.role ? { role: account.role } : {}) } : undefined;
      },
      // Refresh tokens for the code flow whenever offline_access was granted (the default asks for it too).
      issueRefreshToken: (_ctx: KoaContextWithOIDC, client: { grantTypeAllowed(t: string): boolean }) => client.grantTypeAllowed('refresh_token'),
    });
    this.#provider = provider;
    this.#attach(provider.callback());
  }

  /**
   * An access token for `account`, minted through the provider's own models (no browser): the same
   * JWT format, keys, claims and expiry as the token endpoint issues. `audience` other than the
   * client id makes a token for another resource server; `ttl` in seconds.
   */
  async mintAccessToken(account: string, options: { audience?: string; ttl?: number } = {}): Promise<string> {
    const provider = this.provider;
    const client = await provider.Client.find(CLIENT_ID);
    if (!client) throw new Error('client missing');
    const resourceServer = new provider.ResourceServer(RESOURCE, { scope: 'openid', audience: options.audience ?? CLIENT_ID, accessTokenFormat: 'jwt', accessTokenTTL: options.ttl ?? 300 });
    const token = new provider.AccessToken({ accountId: account, client, resourceServer, scope: 'openid', gty: 'authorization_code', ...(options.ttl !== undefined ? { expiresIn: options.ttl } : {}) });
    return token.save();
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/**
 * Signs `login` in to the hub without a browser, through the same pages a browser would use:
 * `GET /auth/login`, the provider's login form and consent form (posted as a browser posts
 * them), the hub's callback. Cookies are kept per name (the hub's and the provider's differ).
 * Resolves with the hub's session cookie (`ahp_session=…`).
 */
export async function signInWithFetch(hubUrl: string, login: string): Promise<string> {
  const jar = new Map<string, string>();
  const go = async (url: string, init: RequestInit = {}): Promise<Response> => {
    const res = await fetch(url, { ...init, redirect: 'manual', headers: { ...(init.headers as Record<string, string>), cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') } });
    for (const line of res.headers.getSetCookie()) {
      const pair = line.split(';')[0] ?? '';
      const eq = pair.indexOf('=');
      const [name, value] = [pair.slice(0, eq).trim(), pair.slice(eq + 1).trim()];
      if (value === '' || /max-age=0\b|expires=thu, 01 jan 1970/i.test(line)) jar.delete(name);
      else jar.set(name, value);
    }
    return res;
  };
  /** Follows redirects from `res` (at `url`) to the first page that is not one. */
  const follow = async (url: string, first: Response): Promise<{ url: string; res: Response }> => {
    let [at, res] = [url, first];
    for (let hops = 0; res.status >= 300 && res.status < 400; hops++) {
      if (hops > 10) throw new Error('too many redirects');
      at = new URL(res.headers.get('location') ?? '/', at).href;
      if (at.startsWith(hubUrl) && !at.startsWith(`${hubUrl}/auth/`)) return { url: at, res };
      res = await go(at);
    }
    return { url: at, res };
  };
  const submit = async (page: { url: string; res: Response }, fields: Record<string, string>): Promise<{ url: string; res: Response }> => {
    const html = await page.res.text();
    const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
    if (!action) throw new Error(`no form on ${page.url} (${page.res.status}): ${html.slice(0, 200)}`);
    const target = new URL(action.replace(/&amp;/g, '&'), page.url).href;
    return follow(target, await go(target, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields).toString() }));
  };
  const loginPage = await follow(`${hubUrl}/auth/login`, await go(`${hubUrl}/auth/login`));
  const consentPage = await submit(loginPage, { prompt: 'login', login, password: 'any password' });
  await submit(consentPage, { prompt: 'consent' });
  const session = jar.get('ahp_session');
  if (!session) throw new Error(`signing ${login} in set no session cookie`);
  return `ahp_session=${session}`;
}

/**
 * Sign-in configuration and bounds (issue 30): the `--oidc-*` flags and their defaults, the
 * refusals of a half-given configuration, and the session store's bounds (per user, in all,
 * pending logins) that keep what a browser can make the hub hold finite.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, parseArgs } from '../../server/config.js';
import { SESSION_LIMITS, SessionStore, type SignInSession } from '../../server/auth/oidc/sessions.js';
import { looksLikeJwt } from '../../server/auth/oidc/token-verifier.js';
import { Role } from '../../server/auth/auth.js';

describe('--oidc-* flags', () => {
  it('nothing of it is needed to start; with an issuer and a client id the claim options have their defaults', () => {
    expect(parseArgs([], {}).oidc).toBeUndefined();
    expect(parseArgs(['--oidc-issuer', 'https://id.example/realms/team', '--oidc-client-id', 'ahp-hub'], {}).oidc).toEqual({
      issuer: 'https://id.example/realms/team',
      clientId: 'ahp-hub',
      clientSecretFile: undefined,
      audience: undefined,
      tenantClaim: 'tenant',
      roleClaim: 'role',
      userClaim: 'sub',
      defaultTenant: undefined,
      tenants: [],
      publicUrl: undefined,
      resource: undefined,
    });
  });

  it('takes every option, and lets the hub listen beyond loopback without a token file', () => {
    const config = parseArgs(
      [
        '--host',
        '0.0.0.0',
        '--oidc-issuer',
        'https://id.example',
        '--oidc-client-id',
        'hub',
        '--oidc-client-secret-file',
        '/run/secret',
        '--oidc-audience',
        'api://hub',
        '--oidc-tenant-claim',
        'org',
        '--oidc-role-claim',
        'hub_role',
        '--oidc-user-claim',
        'preferred_username',
        '--oidc-default-tenant',
        'acme',
        '--oidc-tenants',
        'acme, beta',
        '--oidc-resource',
        'urn:hub',
        '--public-url',
        'https://hub.example/',
      ],
      {},
    );
    expect(config.host).toBe('0.0.0.0');
    expect(config.oidc).toMatchObject({
      clientSecretFile: '/run/secret',
      audience: 'api://hub',
      tenantClaim: 'org',
      roleClaim: 'hub_role',
      userClaim: 'preferred_username',
      defaultTenant: 'acme',
      tenants: ['acme', 'beta'],
      resource: 'urn:hub',
      publicUrl: 'https://hub.example',
    });
  });

  it('refuses a half-given or unsafe configuration with words', () => {
    const refused = (argv: string[]): string => {
      try {
        parseArgs(argv, {});
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        return (err as Error).message;
      }
      throw new Error('not refused');
    };
    expect(refused(['--oidc-client-id', 'hub'])).toBe('--oidc-client-id needs --oidc-issuer (sign-in with OpenID Connect: docs/sign-in.md)');
    expect(refused(['--oidc-issuer', 'https://id.example'])).toMatch(/--oidc-issuer needs --oidc-client-id/);
    expect(refused(['--oidc-issuer', 'http://id.example', '--oidc-client-id', 'hub'])).toMatch(/--oidc-issuer must be an https:\/\/ URL/);
    expect(refused(['--oidc-issuer', 'not a url', '--oidc-client-id', 'hub'])).toMatch(/--oidc-issuer must be a URL/);
    expect(refused(['--oidc-issuer', 'https://id.example', '--oidc-client-id', 'hub', '--oidc-role-claim', 'a b'])).toMatch(/--oidc-role-claim must be a claim name/);
    expect(refused(['--host', '0.0.0.0'])).toMatch(/without --auth or --oidc-issuer/);
    // Plain http on this machine is fine (tests, trying it out).
    expect(parseArgs(['--oidc-issuer', 'http://127.0.0.1:9000', '--oidc-client-id', 'hub'], {}).oidc?.issuer).toBe('http://127.0.0.1:9000');
  });
});

describe('sign-in session bounds', () => {
  const fields = (user: string) => ({ principal: { user, tenant: 'acme', role: Role.User }, accessToken: 'a.b.c', refreshToken: undefined, idToken: undefined, expiresAt: Number.MAX_SAFE_INTEGER });

  it('keeps at most maxPerUser sessions per user and maxSessions in all, ending the oldest', () => {
    let now = 0;
    const ended: SignInSession[] = [];
    const store = new SessionStore(
      () => now,
      (s) => ended.push(s),
      { ...SESSION_LIMITS, maxPerUser: 3, maxSessions: 5 },
    );
    const alice = [1, 2, 3, 4].map(() => store.create(fields('alice')));
    expect(ended.map((s) => s.id)).toEqual([alice[0]!.id]);
    expect(store.size).toBe(3);
    const bob = [1, 2, 3].map(() => store.create(fields('bob')));
    expect(store.size).toBe(5);
    expect(ended.map((s) => s.id)).toEqual([alice[0]!.id, alice[1]!.id]);
    expect(store.get(bob[2]!.id)).toBeDefined();
    // Idle sessions without sockets end; a session with a socket is not idle; max age ends every one.
    now = SESSION_LIMITS.idleMs;
    bob[0]!.sockets = 1;
    expect(store.get(bob[1]!.id)).toBeUndefined();
    expect(store.get(bob[0]!.id)).toBeDefined();
    now = SESSION_LIMITS.maxAgeMs;
    expect(store.get(bob[0]!.id)).toBeUndefined();
  });

  it('pending logins are used once, expire, and are bounded', () => {
    let now = 0;
    const store = new SessionStore(
      () => now,
      () => undefined,
      { ...SESSION_LIMITS, maxPendingLogins: 2 },
    );
    const login = { codeVerifier: 'v', nonce: 'n', returnTo: '/', createdAt: 0 };
    store.addPending('s1', login);
    store.addPending('s2', login);
    store.addPending('s3', login);
    expect(store.takePending('s1')).toBeUndefined();
    expect(store.takePending('s2')).toEqual(login);
    expect(store.takePending('s2')).toBeUndefined();
    now = SESSION_LIMITS.pendingLoginMs;
    expect(store.takePending('s3')).toBeUndefined();
  });

  it('only three-part tokens are tried as JWTs (token-file tokens never reach the verifier)', () => {
    expect(looksLikeJwt('alice-token-0123456789')).toBe(false);
    expect(looksLikeJwt('eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhIn0.c2ln')).toBe(true);
    expect(looksLikeJwt(`${'a'.repeat(20_000)}.b.c`)).toBe(false);
  });
});

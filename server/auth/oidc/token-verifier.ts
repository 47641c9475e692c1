/**
 * Bearer JWTs from the OpenID provider (its access tokens), verified with `jose` against the
 * issuer's keys: the JWKS address comes from the issuer's discovery document (fetched once, on
 * first use, through `openid-client`; a failed fetch is tried again on the next token), and the
 * keys are cached and refetched by `createRemoteJWKSet` when a token names a key it has not seen.
 * Issuer, audience and expiry are checked on every token; the tenant and role come from the
 * token's claims (docs/sign-in.md#claims), so a role changed at the provider applies to every
 * token issued after the change.
 */
import * as oidc from 'openid-client';
import { createRemoteJWKSet, decodeJwt, errors as joseErrors, jwtVerify, type JWTPayload } from 'jose';
import { Role, type Principal } from '../auth.js';
import type { ErrorKind } from '../../../shared/protocol/error-kinds.js';

export interface OidcOptions {
  /** The issuer's URL exactly as its tokens' `iss` names it. */
  readonly issuer: string;
  readonly clientId: string;
  /** The client secret (read from `--oidc-client-secret-file`); absent: a public client (PKCE only). */
  readonly clientSecret?: string | undefined;
  /** The `aud` the hub accepts (default: the client id). */
  readonly audience?: string | undefined;
  /** The claim naming the tenant (default `tenant`); absent in a token: `defaultTenant`. */
  readonly tenantClaim?: string | undefined;
  readonly defaultTenant: string;
  /** Every tenant an OpenID user may belong to (opened at start, like the token file's); default: `defaultTenant`. */
  readonly tenants?: readonly string[] | undefined;
  /** The claim naming the role (default `role`): `user`, `viewer`, `admin` or `agent`; absent: `user`. */
  readonly roleClaim?: string | undefined;
  /** The claim naming the user (default `sub`; e.g. `preferred_username`). */
  readonly userClaim?: string | undefined;
  /** The hub's public address (for the redirect URI and Secure cookies); default: where it listens. */
  readonly publicUrl?: string | undefined;
  /** A `resource` parameter sent with the authorization and token requests (RFC 8707), when the provider wants one. */
  readonly resource?: string | undefined;
  /** Scopes asked for at sign-in (default `openid profile offline_access`). */
  readonly scope?: string | undefined;
}

export type Verified = { readonly ok: true; readonly principal: Principal; readonly expiresAt: number } | { readonly ok: false; readonly kind: ErrorKind; readonly message: string };

const ROLES = new Set<string>(Object.values(Role));
/** Names some providers use for the hub's `user` role. */
const ROLE_ALIASES: Readonly<Record<string, Role>> = { member: Role.User };

/** True when `token` has the shape of a JWS (three base64url parts): only those are tried as JWTs. */
export function looksLikeJwt(token: string | undefined): token is string {
  return token !== undefined && token.length < 16_384 && /^[\w-]+\.[\w-]+\.[\w-]*$/.test(token);
}

export class TokenVerifier {
  #config: Promise<oidc.Configuration> | undefined;
  #jwks: ReturnType<typeof createRemoteJWKSet> | undefined;
  readonly #tenants: ReadonlySet<string>;

  constructor(readonly options: OidcOptions) {
    this.#tenants = new Set(oidcTenants(options));
  }

  get audience(): string {
    return this.options.audience ?? this.options.clientId;
  }

  /** The provider's discovered configuration (cached; a failure is retried on the next call). */
  configuration(): Promise<oidc.Configuration> {
    if (!this.#config) {
      const auth = this.options.clientSecret !== undefined ? oidc.ClientSecretBasic(this.options.clientSecret) : oidc.None();
      const insecure = new URL(this.options.issuer).protocol === 'http:';
      this.#config = oidc.discovery(new URL(this.options.issuer), this.options.clientId, undefined, auth, insecure ? { execute: [oidc.allowInsecureRequests] } : undefined);
      this.#config.catch(() => (this.#config = undefined));
    }
    return this.#config;
  }

  async verify(token: string): Promise<Verified> {
    let unverified: JWTPayload;
    try {
      unverified = decodeJwt(token);
    } catch {
      return { ok: false, kind: 'token_invalid', message: 'the bearer token is neither a token of the token file nor a well-formed JWT' };
    }
    // Before any key is fetched: a token of another issuer is refused by name, not as a bad signature.
    if (unverified.iss !== this.options.issuer) {
      return { ok: false, kind: 'token_issuer_unknown', message: `the token's issuer ${JSON.stringify(unverified.iss ?? null)} is not the one this hub trusts (${this.options.issuer})` };
    }
    let jwks: ReturnType<typeof createRemoteJWKSet>;
    try {
      jwks = await this.#keys();
    } catch {
      return { ok: false, kind: 'sign_in_failed', message: `the identity provider ${this.options.issuer} cannot be reached to fetch its keys; try again later` };
    }
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, jwks, { issuer: this.options.issuer, audience: this.audience, requiredClaims: ['exp', 'sub'], clockTolerance: 5 }));
    } catch (err) {
      return refusalOf(err, this.audience);
    }
    const user = claimString(payload, this.options.userClaim ?? 'sub');
    if (!user || user.length > 256) return { ok: false, kind: 'token_invalid', message: `the token has no usable user claim (${this.options.userClaim ?? 'sub'}, 1 to 256 characters)` };
    const tenant = claimString(payload, this.options.tenantClaim ?? 'tenant') ?? this.options.defaultTenant;
    if (!this.#tenants.has(tenant)) return { ok: false, kind: 'token_invalid', message: `the token's tenant ${JSON.stringify(tenant)} is not served by this hub (--oidc-tenants names the tenants it opens)` };
    const rawRole = claimString(payload, this.options.roleClaim ?? 'role') ?? Role.User;
    const role = ROLE_ALIASES[rawRole] ?? (ROLES.has(rawRole) ? (rawRole as Role) : undefined);
    if (!role) return { ok: false, kind: 'token_invalid', message: `the token's role ${JSON.stringify(rawRole)} is not one of user, viewer, admin, agent (or member)` };
    return { ok: true, principal: { user, tenant, role }, expiresAt: (payload.exp ?? 0) * 1000 };
  }

  async #keys(): Promise<ReturnType<typeof createRemoteJWKSet>> {
    if (this.#jwks) return this.#jwks;
    const metadata = (await this.configuration()).serverMetadata();
    if (!metadata.jwks_uri) throw new Error('the issuer publishes no jwks_uri');
    this.#jwks = createRemoteJWKSet(new URL(metadata.jwks_uri));
    return this.#jwks;
  }
}

/** The tenants OpenID users may name: `tenants`, else the default one; the default always counts. */
export function oidcTenants(options: Pick<OidcOptions, 'tenants' | 'defaultTenant'>): string[] {
  return [...new Set([options.defaultTenant, ...(options.tenants ?? [])])];
}

function claimString(payload: JWTPayload, name: string): string | undefined {
  const value = payload[name];
  if (typeof value === 'string' && value !== '') return value;
  // Some providers send roles as a list: the first one the hub knows counts.
  if (Array.isArray(value)) return value.find((v): v is string => typeof v === 'string' && (ROLES.has(v) || v in ROLE_ALIASES));
  return undefined;
}

function refusalOf(err: unknown, audience: string): Verified {
  if (err instanceof joseErrors.JWTExpired) return { ok: false, kind: 'token_expired', message: 'the access token has expired: get a new one from the identity provider (or sign in again)' };
  if (err instanceof joseErrors.JWTClaimValidationFailed) {
    if (err.claim === 'aud') return { ok: false, kind: 'token_audience_mismatch', message: `the access token is for another audience, not this hub's (${audience})` };
    if (err.claim === 'iss') return { ok: false, kind: 'token_issuer_unknown', message: 'the access token comes from an issuer this hub does not trust' };
    return { ok: false, kind: 'token_invalid', message: `the access token's ${err.claim} claim is not valid: ${err.reason}` };
  }
  if (err instanceof joseErrors.JWSSignatureVerificationFailed || err instanceof joseErrors.JWKSNoMatchingKey || err instanceof joseErrors.JOSEAlgNotAllowed) {
    return { ok: false, kind: 'token_signature_invalid', message: "the access token's signature does not verify against the identity provider's keys" };
  }
  if (err instanceof joseErrors.JWKSTimeout) return { ok: false, kind: 'sign_in_failed', message: "the identity provider's keys could not be fetched in time; try again" };
  return { ok: false, kind: 'token_invalid', message: 'the access token is not a valid JWT' };
}

/**
 * Who is calling. Tokens come from `--auth FILE`; without it the hub runs in single-user dev
 * mode (every caller is the dev admin) and refuses to listen beyond loopback.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { z } from 'zod';

export const Role = { User: 'user', Viewer: 'viewer', Agent: 'agent', Admin: 'admin' } as const;
export type Role = (typeof Role)[keyof typeof Role];

export interface Principal {
  readonly user: string;
  readonly tenant: string;
  readonly role: Role;
}

const authFileSchema = z.object({
  tokens: z
    .array(
      z.object({
        token: z.string().min(16, 'tokens must be at least 16 characters'),
        user: z.string().min(1).max(256),
        tenant: z.string().min(1).max(256),
        role: z.enum(['user', 'viewer', 'agent', 'admin']),
      }),
    )
    .min(1, 'name at least one token')
    .max(100_000),
});

/**
 * Each tenant gets its own log partition and hub state, opened at start (a SQLite file each, or a
 * partition of the PostgreSQL store), so the number of tenants is bounded like everything else.
 */
export const MAX_TENANTS = 1_000;
export type AuthFile = z.infer<typeof authFileSchema>;

export interface Authenticator {
  /** True when tokens are enforced; false in dev mode. */
  readonly enforced: boolean;
  /** The principal for a presented token, or undefined when it is missing or unknown. */
  authenticate(token: string | undefined): Principal | undefined;
  /**
   * Every tenant a token can belong to, first one first (the hub opens one partition per tenant at
   * start; the first is the one `HubServer.hub` names). Never empty.
   */
  readonly tenants: readonly string[];
  /** Whether some token names this user of this tenant now (absent: every user counts as known, dev mode). */
  knowsUser?(tenant: string, user: string): boolean;
}

export const DEV_PRINCIPAL: Principal = { user: 'dev', tenant: 'dev', role: Role.Admin };

export function devAuthenticator(): Authenticator {
  return { enforced: false, authenticate: () => DEV_PRINCIPAL, tenants: [DEV_PRINCIPAL.tenant] };
}

/**
 * Tokens are never looked up by their own text: a map keyed by the secret compares strings with an
 * early exit, which leaks how much of a guess matched. Each token is kept as its SHA-256 digest, the
 * presented token is hashed the same way, and the digests are compared with `timingSafeEqual`. The
 * map is keyed by the digest, whose bytes an attacker cannot steer towards a real token.
 */
export function tokenAuthenticator(file: AuthFile): Authenticator {
  const byDigest = new Map<string, { digest: Buffer; principal: Principal; index: number }>();
  const tenants = new Set<string>();
  const users = new Set<string>();
  for (const [index, t] of file.tokens.entries()) {
    tenants.add(t.tenant);
    users.add(JSON.stringify([t.tenant, t.user]));
    const digest = tokenDigest(t.token);
    const key = digest.toString('base64');
    const earlier = byDigest.get(key);
    // The last entry used to win silently: a copy-paste slip gave a token another user's rights.
    if (earlier) throw new Error(`the auth file names the same token twice (tokens[${earlier.index}] and tokens[${index}]); every token must be unique`);
    byDigest.set(key, { digest, principal: { user: t.user, tenant: t.tenant, role: t.role }, index });
  }
  if (tenants.size === 0) throw new Error('the auth file names no tokens, so no tenant could ever connect');
  if (tenants.size > MAX_TENANTS) throw new Error(`the auth file names ${tenants.size} tenants; at most ${MAX_TENANTS} are supported`);
  return {
    enforced: true,
    tenants: [...tenants],
    knowsUser: (tenant, user) => users.has(JSON.stringify([tenant, user])),
    authenticate: (token) => {
      if (token === undefined) return undefined;
      const digest = tokenDigest(token);
      const entry = byDigest.get(digest.toString('base64'));
      return entry && timingSafeEqual(entry.digest, digest) ? entry.principal : undefined;
    },
  };
}

function tokenDigest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

export function loadAuthFile(path: string): Authenticator {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new Error(`cannot read auth file ${path}: ${(err as Error).message}`);
  }
  const parsed = authFileSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`invalid auth file ${path}: ${issue?.path.join('.') ?? ''} ${issue?.message ?? ''}`.trim());
  }
  return tokenAuthenticator(parsed.data);
}

/**
 * An authenticator whose tokens can be replaced while the hub runs (SIGHUP reloads the token
 * file). The tenants stay those of the start: each has a log and a stack opened then, so a new
 * file may drop tenants' tokens but not name new tenants (that needs a restart).
 */
export interface ReloadableAuthenticator extends Authenticator {
  /** Swaps in `next`'s tokens; throws (keeping the current ones) when it names a tenant not opened at start. */
  replace(next: Authenticator): void;
}

export function reloadable(initial: Authenticator): ReloadableAuthenticator {
  let current = initial;
  const opened = new Set(initial.tenants);
  return {
    enforced: initial.enforced,
    tenants: initial.tenants,
    authenticate: (token) => current.authenticate(token),
    knowsUser: (tenant, user) => current.knowsUser?.(tenant, user) ?? true,
    replace(next) {
      const added = next.tenants.filter((t) => !opened.has(t));
      if (added.length > 0) throw new Error(`the new token file names tenants the hub did not open at start (${added.slice(0, 5).join(', ')}); restart the hub to add tenants`);
      current = next;
    },
  };
}

/** True when `token` still names exactly `principal` (same user, tenant and role). */
export function stillValid(auth: Authenticator, token: string | undefined, principal: Principal): boolean {
  const now = auth.authenticate(token);
  return now !== undefined && now.user === principal.user && now.tenant === principal.tenant && now.role === principal.role;
}

/** The users whose token in `path` is still one of the example files' `change-me-…` secrets. */
export function usersWithExampleSecrets(path: string): string[] {
  try {
    const parsed = authFileSchema.safeParse(JSON.parse(readFileSync(path, 'utf8')));
    return parsed.success ? parsed.data.tokens.filter((t) => t.token.startsWith('change-me-')).map((t) => t.user) : [];
  } catch {
    return [];
  }
}

/** `Authorization: Bearer <token>` first, then `?token=` (browsers cannot set WebSocket headers). */
export function tokenFromRequest(headers: { authorization?: string | undefined }, url: URL): string | undefined {
  const header = headers.authorization;
  if (header) {
    const m = /^Bearer\s+(\S+)$/i.exec(header);
    if (m) return m[1];
  }
  return url.searchParams.get('token') ?? undefined;
}

export function canWrite(p: Principal): boolean {
  return p.role !== Role.Viewer;
}

export function canActAsAgent(p: Principal): boolean {
  return p.role === Role.Agent || p.role === Role.Admin;
}

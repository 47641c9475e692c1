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
    .max(100_000),
});
export type AuthFile = z.infer<typeof authFileSchema>;

export interface Authenticator {
  /** True when tokens are enforced; false in dev mode. */
  readonly enforced: boolean;
  /** The principal for a presented token, or undefined when it is missing or unknown. */
  authenticate(token: string | undefined): Principal | undefined;
}

export const DEV_PRINCIPAL: Principal = { user: 'dev', tenant: 'dev', role: Role.Admin };

export function devAuthenticator(): Authenticator {
  return { enforced: false, authenticate: () => DEV_PRINCIPAL };
}

/**
 * Tokens are never looked up by their own text: a map keyed by the secret compares strings with an
 * early exit, which leaks how much of a guess matched. Each token is kept as its SHA-256 digest, the
 * presented token is hashed the same way, and the digests are compared with `timingSafeEqual`. The
 * map is keyed by the digest, whose bytes an attacker cannot steer towards a real token.
 */
export function tokenAuthenticator(file: AuthFile): Authenticator {
  const byDigest = new Map<string, { digest: Buffer; principal: Principal }>();
  for (const t of file.tokens) {
    const digest = tokenDigest(t.token);
    byDigest.set(digest.toString('base64'), { digest, principal: { user: t.user, tenant: t.tenant, role: t.role } });
  }
  return {
    enforced: true,
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

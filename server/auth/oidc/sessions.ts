/**
 * The app's sign-in sessions: a record per signed-in browser, in memory, keyed by a random id
 * that travels in an HttpOnly cookie (the tokens never reach the page). Bounded like everything a
 * client can make the hub hold: at most `maxPerUser` sessions per user (a new one ends that
 * user's oldest) and `maxSessions` in all (a new one ends the oldest of anyone); pending logins
 * (state → PKCE verifier) likewise, and they expire. A restart ends every session: the app shows
 * its Sign in button again (docs/sign-in.md#sessions).
 */
import { randomBytes } from 'node:crypto';
import type { Principal } from '../auth.js';

export interface SignInSession {
  readonly id: string;
  principal: Principal;
  accessToken: string;
  refreshToken: string | undefined;
  idToken: string | undefined;
  /** When the access token expires (ms). */
  expiresAt: number;
  readonly createdAt: number;
  lastUsedAt: number;
  /** WebSockets opened with this session's cookie (a session with sockets is never idle). */
  sockets: number;
  /** The refresh under way, if any (one at a time per session). */
  refreshing?: Promise<boolean> | undefined;
}

export interface PendingLogin {
  readonly codeVerifier: string;
  readonly nonce: string;
  readonly returnTo: string;
  readonly createdAt: number;
}

export interface SessionLimits {
  readonly maxSessions: number;
  readonly maxPerUser: number;
  readonly maxAgeMs: number;
  readonly idleMs: number;
  readonly maxPendingLogins: number;
  readonly pendingLoginMs: number;
}

export const SESSION_LIMITS: SessionLimits = {
  maxSessions: 10_000,
  maxPerUser: 20,
  /** A session ends this long after sign-in, whatever its refreshes (the cookie's Max-Age too). */
  maxAgeMs: 12 * 60 * 60 * 1000,
  /** A session with no request and no socket this long ends. */
  idleMs: 2 * 60 * 60 * 1000,
  maxPendingLogins: 1_000,
  pendingLoginMs: 10 * 60 * 1000,
};

export function randomId(): string {
  return randomBytes(32).toString('base64url');
}

export class SessionStore {
  readonly #sessions = new Map<string, SignInSession>();
  readonly #pending = new Map<string, PendingLogin>();

  constructor(
    private readonly now: () => number,
    private readonly onEnded: (session: SignInSession) => void,
    readonly limits: SessionLimits = SESSION_LIMITS,
  ) {}

  get size(): number {
    return this.#sessions.size;
  }

  addPending(state: string, login: PendingLogin): void {
    this.#expirePending();
    while (this.#pending.size >= this.limits.maxPendingLogins) this.#pending.delete(this.#pending.keys().next().value!);
    this.#pending.set(state, login);
  }

  /** The pending login of `state`, taken (a state is used once). */
  takePending(state: string): PendingLogin | undefined {
    this.#expirePending();
    const login = this.#pending.get(state);
    this.#pending.delete(state);
    return login;
  }

  create(fields: Omit<SignInSession, 'id' | 'createdAt' | 'lastUsedAt' | 'sockets'>): SignInSession {
    const at = this.now();
    const mine = [...this.#sessions.values()].filter((s) => s.principal.tenant === fields.principal.tenant && s.principal.user === fields.principal.user);
    for (const old of mine.slice(0, Math.max(0, mine.length - this.limits.maxPerUser + 1))) this.end(old.id);
    while (this.#sessions.size >= this.limits.maxSessions) this.end(this.#sessions.keys().next().value!);
    const session: SignInSession = { ...fields, id: randomId(), createdAt: at, lastUsedAt: at, sockets: 0 };
    this.#sessions.set(session.id, session);
    return session;
  }

  /** The live session of `id`, or undefined (an aged or idle one is ended here). */
  get(id: string | undefined): SignInSession | undefined {
    if (id === undefined) return undefined;
    const session = this.#sessions.get(id);
    if (!session) return undefined;
    if (this.#over(session)) {
      this.end(id);
      return undefined;
    }
    return session;
  }

  end(id: string): SignInSession | undefined {
    const session = this.#sessions.get(id);
    if (!session) return undefined;
    this.#sessions.delete(id);
    this.onEnded(session);
    return session;
  }

  /** Ends aged and idle sessions; returns the live ones whose access token expires before `before`. */
  sweep(before: number): SignInSession[] {
    const due: SignInSession[] = [];
    for (const session of [...this.#sessions.values()]) {
      if (this.#over(session)) this.end(session.id);
      else if (session.expiresAt <= before) due.push(session);
    }
    return due;
  }

  #over(session: SignInSession): boolean {
    const at = this.now();
    return at - session.createdAt >= this.limits.maxAgeMs || (session.sockets === 0 && at - session.lastUsedAt >= this.limits.idleMs);
  }

  #expirePending(): void {
    const at = this.now();
    for (const [state, login] of this.#pending) {
      if (at - login.createdAt < this.limits.pendingLoginMs) break;
      this.#pending.delete(state);
    }
  }
}

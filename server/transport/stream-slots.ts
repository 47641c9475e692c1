/**
 * Long-lived HTTP responses (SSE event streams, prompt streams) each hold one of the plain HTTP
 * connection slots (`http-connection-cap.ts`) for as long as they last, and the cap never drops a
 * busy connection. Without a bound per caller, one viewer opening a thousand streams held every
 * slot: `/healthz`, other tenants' requests and their WebSocket upgrades were reset. So streams
 * are counted per principal (tenant + user), per tenant and in all, and the total stays below the
 * HTTP cap by a reserve that short requests always find (docs/limits.md#http-and-sse-slots).
 */
import type { ServerResponse } from 'node:http';
import { stillValid, type Authenticator, type Principal } from '../auth/auth.js';
import { ProtocolError } from '../../shared/protocol/errors.js';

export interface StreamSlotLimits {
  /** Streams in the whole hub: the HTTP connection cap minus the reserve. */
  readonly maxStreams: number;
  readonly maxStreamsPerTenant: number;
  /** Per principal (tenant + user). */
  readonly maxStreamsPerPrincipal: number;
}

/** The stable code of a refused stream (HTTP 429); `scope` names which cap. */
export const TOO_MANY_STREAMS = 'too_many_streams';

export interface StreamSlot {
  /** Idempotent. */
  release(): void;
}

/**
 * Stream caps for an HTTP cap of `maxHttpConnections`: a quarter (at least 16) is kept for short
 * requests, one tenant may hold half, one principal a tenth (all of the total in dev mode, where
 * every caller is the one dev principal).
 */
export function streamSlotLimitsFor(maxHttpConnections: number, enforced: boolean): StreamSlotLimits {
  const reserve = Math.min(maxHttpConnections - 1, Math.max(16, Math.floor(maxHttpConnections / 4)));
  const maxStreams = Math.max(1, maxHttpConnections - reserve);
  if (!enforced) return { maxStreams, maxStreamsPerTenant: maxStreams, maxStreamsPerPrincipal: maxStreams };
  return {
    maxStreams,
    maxStreamsPerTenant: Math.min(maxStreams, Math.max(1, Math.floor(maxHttpConnections / 2))),
    maxStreamsPerPrincipal: Math.min(maxStreams, Math.max(1, Math.floor(maxHttpConnections / 10))),
  };
}

export class StreamSlots {
  readonly #byPrincipal = new Map<string, number>();
  readonly #byTenant = new Map<string, number>();
  #open = 0;
  #refused = 0;
  /** Open streams with the token they were opened with, to end them when it is revoked. */
  readonly #streams = new Map<object, { token: string | undefined; principal: Principal; res: ServerResponse | undefined }>();

  constructor(readonly limits: StreamSlotLimits) {}

  /**
   * Takes a slot for a stream of `principal`, or throws a 429 `too_many_streams` naming the cap;
   * the refused response closes its connection, so the refusal frees the slot it came in on.
   */
  claim(principal: Principal, res?: ServerResponse, token?: string): StreamSlot {
    const key = `${principal.tenant}\u0000${principal.user}`;
    const mine = this.#byPrincipal.get(key) ?? 0;
    const tenants = this.#byTenant.get(principal.tenant) ?? 0;
    const refusal =
      mine >= this.limits.maxStreamsPerPrincipal
        ? { scope: 'principal', limit: this.limits.maxStreamsPerPrincipal, who: 'this token' }
        : tenants >= this.limits.maxStreamsPerTenant
          ? { scope: 'tenant', limit: this.limits.maxStreamsPerTenant, who: 'this tenant' }
          : this.#open >= this.limits.maxStreams
            ? { scope: 'hub', limit: this.limits.maxStreams, who: 'the hub' }
            : undefined;
    if (refusal) {
      this.#refused++;
      if (res) res.shouldKeepAlive = false;
      throw new ProtocolError(TOO_MANY_STREAMS, `${refusal.who} already holds ${refusal.limit} open event streams (the cap); close one first`, { scope: refusal.scope });
    }
    this.#byPrincipal.set(key, mine + 1);
    this.#byTenant.set(principal.tenant, tenants + 1);
    this.#open++;
    let released = false;
    const slot: StreamSlot = {
      release: () => {
        if (released) return;
        released = true;
        this.#streams.delete(slot);
        this.#open--;
        decrement(this.#byPrincipal, key);
        decrement(this.#byTenant, principal.tenant);
      },
    };
    this.#streams.set(slot, { token, principal, res });
    return slot;
  }

  /** After a token reload: ends every stream whose token no longer names its principal; returns how many. */
  endRevoked(auth: Authenticator): number {
    let ended = 0;
    for (const [slot, { token, principal, res }] of [...this.#streams]) {
      if (stillValid(auth, token, principal)) continue;
      res?.destroy();
      (slot as StreamSlot).release();
      ended++;
    }
    return ended;
  }

  /** Streams open now (every tenant). */
  get open(): number {
    return this.#open;
  }

  /** Streams refused at a cap since start. */
  get refused(): number {
    return this.#refused;
  }
}

function decrement(map: Map<string, number>, key: string): void {
  const n = (map.get(key) ?? 1) - 1;
  if (n <= 0) map.delete(key);
  else map.set(key, n);
}

/** For routers used without a server (unit tests): streams are not counted. */
export const UNCOUNTED_SLOT: StreamSlot = { release: () => undefined };

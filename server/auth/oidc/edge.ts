/**
 * The request edge of sign-in: who an HTTP request is, decided once before routing. The token
 * file answers synchronously as before; only when it does not and sign-in is configured is the
 * bearer JWT or the session cookie resolved (asynchronously). A refused JWT keeps its reason
 * (`token_expired`, `token_audience_mismatch`…) for the 401 a protected route answers; an SSE
 * stream opened with a JWT ends at that token's expiry.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Authenticator, Principal } from '../auth.js';
import { ProtocolError } from '../../../shared/protocol/errors.js';
import type { StreamSlot } from '../../transport/stream-slots.js';
import type { OidcAuth } from './oidc-auth.js';
import { atTime } from './at-time.js';

export interface EdgeCaller {
  readonly principal: Principal | undefined;
  /** Why the presented credential was refused, when it is known (else the router's plain 401). */
  readonly refusal?: ProtocolError | undefined;
  readonly streams: { claim(principal: Principal, res: ServerResponse): StreamSlot };
}

export async function edgeCaller(auth: Authenticator, signIn: OidcAuth | undefined, req: IncomingMessage, token: string | undefined, claim: (p: Principal, res: ServerResponse) => StreamSlot): Promise<EdgeCaller> {
  const principal = auth.authenticate(token);
  if (principal || !signIn) return { principal, streams: { claim } };
  const edge = await signIn.resolve(token, req.headers);
  if (edge.kind === 'none') return { principal: undefined, streams: { claim } };
  // `error` is the field qwen serve's 401 has (as the router's plain 401).
  if (edge.kind === 'refused') return { principal: undefined, refusal: new ProtocolError(edge.error, edge.message, { error: 'Unauthorized' }), streams: { claim } };
  const expiresAt = edge.expiresAt;
  return {
    principal: edge.principal,
    streams: {
      claim: (p, res) => {
        const slot = claim(p, res);
        if (expiresAt !== undefined) {
          const timer = atTime(expiresAt, () => res.destroy());
          res.once('close', () => timer.cancel());
        }
        return slot;
      },
    },
  };
}

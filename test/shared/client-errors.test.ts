/**
 * The client's errors share one base (`AhpError`) and carry the refusal's kind of the one table
 * when the hub named one; failures of the link itself have a kind only the client uses.
 */
import { describe, expect, it } from 'vitest';
import { AhpAuthError, AhpConnectionError, AhpError, AhpProtocolError, AhpRequestError, AhpTimeoutError } from '../../shared/client/ahp-client.js';
import { ErrorCode } from '../../shared/protocol/errors.js';

describe('client errors', () => {
  it('are all AhpError, with the kind the hub named', () => {
    const request = new AhpRequestError('createSession', { code: ErrorCode.AlreadyExists, message: 'taken', data: { kind: 'duplicate' } });
    const coded = new AhpRequestError('createSession', { code: ErrorCode.SessionNotFound, message: 'gone' });
    const auth = new AhpAuthError(401, { code: 'token_expired', reason: 'expired' });
    const plain = new AhpAuthError(401);
    const errors = [request, coded, auth, plain, new AhpConnectionError('dropped', false), new AhpTimeoutError('listSessions', 10), new AhpProtocolError('bad result')];
    expect(errors.every((e) => e instanceof AhpError && e instanceof Error)).toBe(true);
    expect(errors.map((e) => e.kind)).toEqual(['duplicate', 'session_not_found', 'token_expired', 'unauthorized', 'connection_lost', 'timeout', 'unexpected_response']);
    expect(auth).toBeInstanceOf(AhpConnectionError);
  });
});

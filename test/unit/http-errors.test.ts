/**
 * HTTP error bodies are built one way (`httpBodyOf`, server/transport/http-reply.ts) from the one
 * carrier (`ProtocolError`), with statuses and codes from the one table. The expected texts are
 * the exact bytes clients received before the error classes were unified, key order included.
 */
import { describe, expect, it } from 'vitest';
import { ErrorCode, ProtocolError } from '../../shared/protocol/errors.js';
import { dataWorksError, qwenError, replyHttpError } from '../../server/interactions/replies.js';
import { inputErrorKind } from '../../server/steering/feature.js';
import { FINER_KINDS, rpcCodeOf, type ErrorKind } from '../../shared/protocol/error-kinds.js';
import { InputError, malformed } from '../../server/steering/inputs.js';
import { httpBodyOf } from '../../server/transport/http-reply.js';

const wire = (err: ProtocolError): string => JSON.stringify(httpBodyOf(err));

describe('ProtocolError HTTP body', () => {
  it('is {code, message} with data fields first, the status from the table', () => {
    expect(wire(new ProtocolError('not_found', 'no route'))).toBe('{"code":"not_found","message":"no route"}');
    const limited = new ProtocolError('limit_exceeded', 'slow down', { limit: 3 });
    expect([limited.status, wire(limited)]).toEqual([429, '{"limit":3,"code":"limit_exceeded","message":"slow down"}']);
  });

  it('a finer kind keeps its historic code and status, and its coarse kind on JSON-RPC', () => {
    const full = new ProtocolError('hub_connections_full', 'the hub is full');
    expect([full.status, full.code, full.family, wire(full)]).toEqual([503, ErrorCode.LimitExceeded, 'limit_exceeded', '{"code":"too_many_connections","message":"the hub is full"}']);
  });
});

describe('InputError (steering refusals) is a ProtocolError with the same body as before', () => {
  it('puts extra fields, then outcome, then code and message', () => {
    const err = new InputError('input_conflict', 'rejected', 'same id, other text', { receipt: { inputId: 'in-1' } });
    expect(err).toBeInstanceOf(ProtocolError);
    expect(err.status).toBe(409);
    expect(wire(err)).toBe('{"receipt":{"inputId":"in-1"},"outcome":"rejected","code":"input_conflict","message":"same id, other text"}');
  });

  it('leaves outcome out when the refusal has none (session not found, viewer)', () => {
    expect(wire(new InputError('session_not_found', undefined, 'session not found'))).toBe('{"code":"session_not_found","message":"session not found"}');
  });

  it('a malformed request is 400 invalid_request with outcome rejected', () => {
    const err = malformed('inputId is required');
    expect([err.status, wire(err)]).toEqual([400, '{"outcome":"rejected","code":"invalid_request","message":"inputId is required"}']);
  });
});

describe('steering: refusal → error kind → JSON-RPC error code on the WebSocket', () => {
  it('maps 400, 403, 404 and 429 to their kinds and every other refusal to input_rejected', () => {
    const refusals = [
      malformed('inputId is required'),
      new InputError('permission_denied', undefined, 'read-only'),
      new InputError('session_not_found', undefined, 'session not found'),
      new InputError('input_not_found', 'rejected', 'no receipt'),
      new InputError('input_quota_exceeded', 'rejected', 'at most 32'),
      new InputError('turn_closed', 'closed', 'closed'),
      new InputError('empty_content', 'rejected', 'empty'),
    ];
    expect(refusals.map(inputErrorKind)).toEqual(['invalid_params', 'permission_denied', 'session_not_found', 'not_found', 'limit_exceeded', 'input_rejected', 'input_rejected']);
    expect(refusals.map((e) => rpcCodeOf(inputErrorKind(e)))).toEqual([
      ErrorCode.InvalidParams,
      ErrorCode.PermissionDenied,
      ErrorCode.SessionNotFound,
      ErrorCode.NotFound,
      ErrorCode.LimitExceeded,
      ErrorCode.InputRejected,
      ErrorCode.InputRejected,
    ]);
  });
});

describe('permission reply errors → HTTP', () => {
  it('gives 403 to a refused permission, 501 when replies are off, 503 when the hub cannot apply, 400 otherwise', () => {
    // The 18 names the DataWorks reply route answered before the table held them, with their statuses and codes then.
    const before: Record<string, [number, number]> = {
      INVALID_JSON: [400, -32700],
      INVALID_REQUEST: [400, -32600],
      MISSING_ID: [400, -32600],
      MISSING_PARAMS: [400, -32602],
      INVALID_SESSION_ID: [400, -32602],
      INVALID_PERMISSION_REQUEST_ID: [400, -32602],
      MISSING_OUTCOME: [400, -32602],
      INVALID_OUTCOME: [400, -32602],
      MISSING_OPTION_ID: [400, -32602],
      INVALID_OPTION_ID: [400, -32602],
      INVALID_ANSWERS: [400, -32602],
      INVALID_ANSWER_KEY: [400, -32602],
      INVALID_ANSWER: [400, -32602],
      MISSING_REQUIRED_ANSWER: [400, -32602],
      ANSWERS_NOT_EXPECTED: [400, -32602],
      PERMISSION_DENIED: [403, -32009],
      DAEMON_PERMISSION_UNAVAILABLE: [501, -32601],
      INTERNAL_ERROR: [503, -32603],
    };
    const kindOf = (name: string): ErrorKind => (name === 'INTERNAL_ERROR' ? 'reply_not_applied' : (name.toLowerCase() as ErrorKind));
    const now = Object.fromEntries(
      Object.keys(before).map((name) => {
        const e = dataWorksError({ kind: kindOf(name), message: 'm' });
        return [name, [new ProtocolError(kindOf(name), 'm').status, e.Code, e.ErrorCode]];
      }),
    );
    expect(now).toEqual(Object.fromEntries(Object.entries(before).map(([name, [status, code]]) => [name, [status, code, name]])));
  });

  it('a body error keeps its status inside the DataWorks envelope, named INVALID_REQUEST', () => {
    for (const kind of ['body_too_large', 'unsupported_media_type'] as const) {
      expect([FINER_KINDS[kind].http, dataWorksError({ kind, message: 'm' })]).toEqual([kind === 'body_too_large' ? 413 : 415, { Code: -32600, ErrorCode: 'INVALID_REQUEST', Message: 'm', Data: {} }]);
    }
  });

  it('a Qwen-style error repeats the message as error, before code and message', () => {
    expect(wire(qwenError('session_exists', 'session id s1 is taken'))).toBe('{"error":"session id s1 is taken","code":"session_exists","message":"session id s1 is taken"}');
  });

  it('a Qwen-style reply error has the lower-cased name as code and the message also as error', () => {
    const err = replyHttpError({ kind: 'invalid_option_id', message: 'option "x" was not offered' });
    expect([err.status, wire(err)]).toEqual([400, '{"error":"option \\"x\\" was not offered","code":"invalid_option_id","message":"option \\"x\\" was not offered"}']);
  });

  it('the session route also names the upper-case errorCode, first', () => {
    const err = replyHttpError({ kind: 'permission_denied', message: 'viewers cannot answer' }, { errorCode: 'PERMISSION_DENIED' });
    expect([err.status, wire(err)]).toEqual([403, '{"errorCode":"PERMISSION_DENIED","error":"viewers cannot answer","code":"permission_denied","message":"viewers cannot answer"}']);
  });
});

/**
 * HTTP error bodies are built one way (`HttpError.body()`), and the status / code mappings each
 * live in one function. The expected texts are the exact bytes clients received before the
 * error classes were unified, key order included.
 */
import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../../shared/protocol/errors.js';
import { qwenHttpError, replyErrorStatus, replyHttpError, REPLY_ERRORS, type ReplyErrorName } from '../../server/interactions/replies.js';
import { inputErrorKind } from '../../server/steering/feature.js';
import { rpcCodeOf } from '../../shared/protocol/error-kinds.js';
import { InputError, malformed } from '../../server/steering/inputs.js';
import { HttpError } from '../../server/transport/http-error.js';

const wire = (err: HttpError): string => JSON.stringify(err.body());

describe('HttpError body', () => {
  it('is {code, message} with extra fields first', () => {
    expect(wire(new HttpError(404, 'not_found', 'no route'))).toBe('{"code":"not_found","message":"no route"}');
    expect(wire(new HttpError(429, 'too_many', 'slow down', { limit: 3 }))).toBe('{"limit":3,"code":"too_many","message":"slow down"}');
  });
});

describe('InputError (steering refusals) is an HttpError with the same body as before', () => {
  it('puts extra fields, then outcome, then code and message', () => {
    const err = new InputError(409, 'rejected', 'input_conflict', 'same id, other text', { receipt: { inputId: 'in-1' } });
    expect(err).toBeInstanceOf(HttpError);
    expect(err.status).toBe(409);
    expect(wire(err)).toBe('{"receipt":{"inputId":"in-1"},"outcome":"rejected","code":"input_conflict","message":"same id, other text"}');
  });

  it('leaves outcome out when the refusal has none (session not found, viewer)', () => {
    expect(wire(new InputError(404, undefined, 'session_not_found', 'session not found'))).toBe('{"code":"session_not_found","message":"session not found"}');
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
      new InputError(403, undefined, 'permission_denied', 'read-only'),
      new InputError(404, undefined, 'session_not_found', 'session not found'),
      new InputError(404, 'rejected', 'input_not_found', 'no receipt'),
      new InputError(429, 'rejected', 'input_quota_exceeded', 'at most 32'),
      new InputError(409, 'closed', 'turn_closed', 'closed'),
      new InputError(422, 'rejected', 'empty_content', 'empty'),
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
    const statuses = Object.fromEntries((Object.keys(REPLY_ERRORS) as ReplyErrorName[]).map((code) => [code, replyErrorStatus(code)]));
    expect(statuses).toMatchObject({ PERMISSION_DENIED: 403, DAEMON_PERMISSION_UNAVAILABLE: 501, INTERNAL_ERROR: 503, INVALID_OPTION_ID: 400, MISSING_OUTCOME: 400 });
    const others = Object.entries(statuses).filter(([code]) => !['PERMISSION_DENIED', 'DAEMON_PERMISSION_UNAVAILABLE', 'INTERNAL_ERROR'].includes(code));
    expect(others.every(([, status]) => status === 400)).toBe(true);
  });

  it('a Qwen-style error repeats the message as error, before code and message', () => {
    expect(wire(qwenHttpError(409, 'session_exists', 'session id s1 is taken'))).toBe('{"error":"session id s1 is taken","code":"session_exists","message":"session id s1 is taken"}');
  });

  it('a Qwen-style reply error has the lower-cased name as code and the message also as error', () => {
    const err = replyHttpError({ errorCode: 'INVALID_OPTION_ID', message: 'option "x" was not offered' });
    expect([err.status, wire(err)]).toEqual([400, '{"error":"option \\"x\\" was not offered","code":"invalid_option_id","message":"option \\"x\\" was not offered"}']);
  });

  it('the session route also names the upper-case errorCode, first', () => {
    const err = replyHttpError({ errorCode: 'PERMISSION_DENIED', message: 'viewers cannot answer' }, { errorCode: 'PERMISSION_DENIED' });
    expect([err.status, wire(err)]).toEqual([403, '{"errorCode":"PERMISSION_DENIED","error":"viewers cannot answer","code":"permission_denied","message":"viewers cannot answer"}']);
  });
});

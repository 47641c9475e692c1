/**
 * The one place an HTTP status is written: success and redirect answers have named helpers, and
 * an error is a `ProtocolError` (shared/protocol/errors.ts) whose status and body `code` come from
 * the one table (shared/protocol/error-kinds.ts). Routes throw the error (the router answers it
 * with `sendError`) or call these; no route writes a status number itself
 * (`scripts/check-cycles.mjs` fails on one).
 */
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { httpCodeOf, httpStatusOf, type ErrorKind } from '../../shared/protocol/error-kinds.js';
import type { ProtocolError } from '../../shared/protocol/errors.js';

const OK = 200;
const CREATED = 201;
const ACCEPTED = 202;
const NO_CONTENT = 204;
const FOUND = 302;

function writeJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), 'cache-control': 'no-store' });
  res.end(text);
}

/** 200 with a JSON body. */
export function sendJson(res: ServerResponse, body: unknown): void {
  writeJson(res, OK, body);
}

/** 201 (something was made) with a JSON body. */
export function sendCreated(res: ServerResponse, body: unknown): void {
  writeJson(res, CREATED, body);
}

/** 202 (taken, done later) with a JSON body. */
export function sendAccepted(res: ServerResponse, body: unknown): void {
  writeJson(res, ACCEPTED, body);
}

/** 204, no body. */
export function sendNoContent(res: ServerResponse, headers: OutgoingHttpHeaders = {}): void {
  res.writeHead(NO_CONTENT, headers).end();
}

/** 200 with headers of the caller's (a stream, a file, a page); the caller writes the body. */
export function startOk(res: ServerResponse, headers: OutgoingHttpHeaders): ServerResponse {
  return res.writeHead(OK, headers);
}

/** 302 to `location`. */
export function redirect(res: ServerResponse, location: string, headers: OutgoingHttpHeaders = {}): void {
  res.writeHead(FOUND, { location, ...headers, 'content-length': 0 }).end();
}

/**
 * A JSON body that is not an error body of ours (a DataWorks envelope, `/healthz`, qwen's queue
 * refusal with its figures after `message`) answered with a kind's status.
 */
export function sendJsonAs(res: ServerResponse, kind: ErrorKind, body: unknown): void {
  writeJson(res, httpStatusOf(kind), body);
}

/** The error's HTTP body: `data`'s fields (when an object), then `code` and `message`. */
export function httpBodyOf(err: ProtocolError): Record<string, unknown> {
  const extra = typeof err.data === 'object' && err.data !== null && !Array.isArray(err.data) ? (err.data as Record<string, unknown>) : {};
  return { ...extra, code: httpCodeOf(err.kind), message: err.message };
}

/** Answers an error with its kind's status and `httpBodyOf(err)`. */
export function sendError(res: ServerResponse, err: ProtocolError): void {
  writeJson(res, err.status, httpBodyOf(err));
}

/** The bytes of a refused WebSocket upgrade: the error's status line and body, connection closed. */
export function upgradeRefusalOf(err: ProtocolError, statusText: (status: number) => string): string {
  const body = JSON.stringify({ code: httpCodeOf(err.kind), message: err.message });
  return `HTTP/1.1 ${err.status} ${statusText(err.status)}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

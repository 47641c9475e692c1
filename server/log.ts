/**
 * Logging. Library code takes a `Logger` by injection and never calls console.*; the composition
 * root creates one backed by pino (JSON lines on stderr) and tests pass `silentLogger`.
 */
import { pino, type Logger as PinoLogger } from 'pino';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
}

function wrap(p: PinoLogger): Logger {
  return {
    debug: (msg, fields) => p.debug(fields ?? {}, msg),
    info: (msg, fields) => p.info(fields ?? {}, msg),
    warn: (msg, fields) => p.warn(fields ?? {}, msg),
    error: (msg, fields) => p.error(fields ?? {}, msg),
    child: (fields) => wrap(p.child(fields)),
  };
}

/** A logger writing JSON lines to stderr (stdout carries only the `listening on` line). */
export function createLogger(level: LogLevel = 'info'): Logger {
  return wrap(pino({ level, base: undefined, timestamp: pino.stdTimeFunctions.isoTime, formatters: { level: (label) => ({ level: label }) } }, pino.destination({ fd: 2, sync: true })));
}

export const silentLogger: Logger = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
  child: () => silentLogger,
};

/** Error details safe for logs (never sent to clients). */
export function errorFields(err: unknown): Record<string, unknown> {
  if (err instanceof Error) return { err: err.message, stack: err.stack };
  return { err: String(err) };
}

/** An error's message (or the thrown value as text), for messages that quote a cause. */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

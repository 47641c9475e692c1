/**
 * The PostgreSQL password of `--store`, kept off every command line and out of every environment
 * an agent could read (docs/operations.md#store-password). It comes from, in this order of
 * preference: `--store-password-file FILE` (HUB_STORE_PASSWORD_FILE), `PGPASSWORD` (removed from
 * the environment once read, so no child inherits it), or libpq's `PGPASSFILE` / `~/.pgpass`
 * (read by the pg driver when the URL has no password). A password written into the URL still
 * works, but it is taken out of the URL, out of `process.argv` and out of the process title
 * (which is what `/proc/<pid>/cmdline` shows), and the hub warns at start.
 */
import { readFileSync, statSync } from 'node:fs';

export class StoreSecretError extends Error {}

export interface StoreSecret {
  /** The store URL without a password (safe to log, to show, to keep). */
  readonly url: string;
  /** The password, when one was given; undefined: the driver's own sources (PGPASSFILE, ~/.pgpass). */
  readonly password: string | undefined;
  /** Where the password came from. */
  readonly source: 'file' | 'environment' | 'url' | 'driver';
}

/** Longest password file read (a password, not a document). */
const MAX_PASSWORD_FILE_BYTES = 4_096;

/**
 * Splits the password off `url` and finds it where the operator put it. `env` loses `PGPASSWORD`
 * when that is where it came from (pass `process.env`: Node's setter unsets it for the children).
 */
export function resolveStoreSecret(url: string, passwordFile: string | undefined, env: NodeJS.ProcessEnv): StoreSecret {
  // Split by hand: WHATWG URL refuses forms libpq and pg accept (`postgres://ahp@/db?host=/run/postgresql`).
  const parts = urlParts(url);
  const inUrl = parts.password;
  const bare = joinUrl({ ...parts, password: undefined });
  const fromEnv = env['PGPASSWORD'];
  delete env['PGPASSWORD'];
  const given = [passwordFile !== undefined && '--store-password-file', fromEnv !== undefined && 'PGPASSWORD', inUrl !== undefined && 'the --store URL'].filter(Boolean);
  if (given.length > 1) throw new StoreSecretError(`the store password is given twice (${given.join(' and ')}): give it once, preferably with --store-password-file`);
  if (passwordFile !== undefined) return { url: bare, password: readPasswordFile(passwordFile), source: 'file' };
  if (fromEnv !== undefined) return { url: bare, password: fromEnv, source: 'environment' };
  if (inUrl !== undefined) return { url: bare, password: inUrl, source: 'url' };
  return { url: bare, password: undefined, source: 'driver' };
}

function readPasswordFile(file: string): string {
  let text: string;
  try {
    if (statSync(file).size > MAX_PASSWORD_FILE_BYTES) throw new StoreSecretError(`--store-password-file ${file} is over ${MAX_PASSWORD_FILE_BYTES} bytes: it should hold only the password`);
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if (err instanceof StoreSecretError) throw err;
    throw new StoreSecretError(`cannot read --store-password-file ${file}: ${(err as Error).message}`);
  }
  // One line; a trailing newline (echo, editors) is not part of the password.
  const password = text.replace(/\r?\n$/, '');
  if (password === '' || /[\r\n]/.test(password)) throw new StoreSecretError(`--store-password-file ${file} must hold the password on one line`);
  return password;
}

/** The URL the driver connects with: `secret.url` with the password put back (in memory only). */
export function connectionUrl(secret: StoreSecret): string {
  if (secret.password === undefined) return secret.url;
  return joinUrl({ ...urlParts(secret.url), password: secret.password });
}

interface UrlParts {
  readonly scheme: string;
  readonly user: string | undefined;
  readonly password: string | undefined;
  /** Host, port, path and query: everything after the user info. */
  readonly rest: string;
}

function urlParts(url: string): UrlParts {
  const m = /^(postgres(?:ql)?:\/\/)(?:([^/?#]*)@)?(.*)$/s.exec(url);
  if (!m) throw new StoreSecretError('--store must be a postgres://user@host:port/database URL');
  const userinfo = m[2];
  const colon = userinfo?.indexOf(':') ?? -1;
  const user = userinfo === undefined ? undefined : colon === -1 ? userinfo : userinfo.slice(0, colon);
  const password = userinfo === undefined || colon === -1 ? undefined : percentDecoded(userinfo.slice(colon + 1));
  return { scheme: m[1]!, user, password: password === '' ? undefined : password, rest: m[3]! };
}

function joinUrl(parts: UrlParts): string {
  const password = parts.password === undefined ? '' : `:${encodeURIComponent(parts.password)}`;
  const userinfo = parts.user === undefined && password === '' ? '' : `${parts.user ?? ''}${password}@`;
  return `${parts.scheme}${userinfo}${parts.rest}`;
}

function percentDecoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** `argv` with the password of every postgres URL in it (`--store URL`, `--store=URL`) removed. */
export function scrubbedArgv(argv: readonly string[]): string[] {
  return argv.map((arg) => arg.replace(/(postgres(?:ql)?:\/\/[^:@/\s]*):[^/\s]*@/g, '$1@'));
}

/**
 * Takes a password out of this process's command line: `process.argv` and the title, which on
 * Linux is written over the original argv area that `/proc/<pid>/cmdline` reads (the shell or
 * `npm` that started the hub keeps its own copy: that is why the hub warns).
 */
export function scrubProcessCommandLine(): void {
  const scrubbed = scrubbedArgv(process.argv);
  if (scrubbed.every((arg, i) => arg === process.argv[i])) return;
  process.argv.splice(0, process.argv.length, ...scrubbed);
  process.title = [process.argv0, ...scrubbed.slice(1)].join(' ');
}

/**
 * Channel URIs. Every AHP command and notification names its channel in `params.channel`.
 * - `ahp-root://` is the connection-level channel (catalogue, initialize, ping, reconnect).
 * - `ahp-session:/<id>` is chosen by the client at `createSession`.
 * - `ahp-chat:/<id>` is allocated by the server at `createChat`; it does not encode its session.
 */
export const ROOT_URI = 'ahp-root://';
export const SESSION_SCHEME = 'ahp-session:/';
export const CHAT_SCHEME = 'ahp-chat:/';

export type ChannelKind = 'root' | 'session' | 'chat';

/** Longest channel URI we accept; ids beyond this are refused rather than stored. */
export const MAX_URI_LENGTH = 512;

export function channelKind(uri: string): ChannelKind | undefined {
  if (uri === ROOT_URI) return 'root';
  if (uri.length > MAX_URI_LENGTH) return undefined;
  if (uri.startsWith(SESSION_SCHEME) && uri.length > SESSION_SCHEME.length) return 'session';
  if (uri.startsWith(CHAT_SCHEME) && uri.length > CHAT_SCHEME.length) return 'chat';
  return undefined;
}

export function sessionUri(id: string): string {
  return SESSION_SCHEME + id;
}

export function chatUri(id: string): string {
  return CHAT_SCHEME + id;
}

/** A session URI from either its id (the path part, as HTTP routes and CLI flags take it) or the full URI. */
export function asSessionUri(idOrUri: string): string {
  return idOrUri.startsWith(SESSION_SCHEME) ? idOrUri : sessionUri(idOrUri);
}

/** The path part of `ahp-session:/<id>`, used as `{sessionId}` in HTTP routes. */
export function sessionIdOf(uri: string): string {
  return uri.startsWith(SESSION_SCHEME) ? uri.slice(SESSION_SCHEME.length) : uri;
}

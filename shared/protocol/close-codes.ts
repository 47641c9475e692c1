/**
 * WebSocket close codes the hub uses beyond the standard ones, where a client must know one to
 * act on it. (The others — 4008 slow consumer, 4401 token revoked, 4408 initialize timeout,
 * 4503 tenant reloaded — are listed with the server's transport; a client treats them as any drop.)
 */

/**
 * The hub node is draining (SIGTERM in a cluster, docs/cluster.md): its work is moving to the
 * other nodes, so reconnect at once, without back-off; the load balancer sends the new
 * connection to another node. Resuming there (`reconnect` from the last seen serverSeq) is the
 * same as after any drop.
 */
export const RECONNECT_NOW_CLOSE_CODE = 4012;

/**
 * A channel this connection subscribes to changed by an action its negotiated protocol version
 * does not know, and no older action says the same (shared/protocol/version-features.ts):
 * reconnect at once, without back-off; `reconnect` then answers that connection with snapshots.
 */
export const RESYNC_CLOSE_CODE = 4013;

/**
 * The bearer token (an OpenID Connect access token) or the sign-in session the connection was
 * opened with has expired or ended: connecting again with the same token is refused, so get a
 * new token (or sign in again) first, then reconnect and resume (docs/sign-in.md).
 */
export const TOKEN_EXPIRED_CLOSE_CODE = 4402;

/**
 * The contract between the composition root and a feature module: what a feature gets to plug
 * into and what it hands back. Its own module so features, `server.ts` and `tenant-stack.ts`
 * can all name it without importing each other.
 */
import type { Authenticator } from './auth/auth.js';
import type { SteeringHost } from './agents/agent-runner.js';
import type { RpcRegistrar } from './ahp/rpc.js';
import type { HubPort } from './hub/hub-port.js';
import type { Logger } from './log.js';
import type { HttpRegistrar } from './transport/http-router.js';
import { ProtocolError } from '../shared/protocol/errors.js';
import { STORAGE_UNAVAILABLE_REASON } from './hub/commit-pipeline.js';
import type { HubMetrics } from './metrics.js';

/**
 * What a feature module (steering, permission replies, collaboration, qwen-serve) gets to plug
 * into: the hub through its port, and only the registration side of the JSON-RPC and HTTP routers.
 */
export interface FeatureContext {
  readonly hub: HubPort;
  /** The tenant this stack serves (absent in contexts tests build by hand). */
  readonly tenant?: string;
  readonly rpc: RpcRegistrar;
  readonly http: HttpRegistrar;
  /** The agent runner, as far as steering needs it. */
  readonly runner: SteeringHost;
  readonly logger: Logger;
  readonly now: () => number;
  readonly newId: () => string;
  readonly auth: Authenticator;
  /**
   * Services features offer each other, per server instance (e.g. the interactions registry the
   * qwen-serve surface answers through). Features install in list order, so a feature finds
   * what the ones before it provided.
   */
  readonly services: Map<string, unknown>;
  /** Gauges read at scrape time (`GET /metrics`). */
  readonly metrics: Pick<HubMetrics, 'gauge'>;
}

export interface Feature {
  readonly name: string;
  install(ctx: FeatureContext): { close?(): Promise<void> | void } | void;
}

/**
 * An event stream is not opened while the tenant's storage fails (issue 33.6): what it would
 * show may be a batch the log never takes, and a client told "storage unavailable" at once
 * retries, while an open stream that stays silent tells it nothing.
 */
export function refuseStreamWhileStorageFails(hub: HubPort): void {
  if (hub.storageProblem === undefined) return;
  throw new ProtocolError('storage_unavailable', `${STORAGE_UNAVAILABLE_REASON}: event streams are not opened while this tenant's storage fails; try again shortly`);
}

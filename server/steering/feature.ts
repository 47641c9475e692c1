/**
 * Steering a running turn (issue #3): the input engine behind three surfaces that answer with
 * the same results and the same machine-readable codes.
 *
 * HTTP (auth as the hub; `{sessionId}` = the path part of `ahp-session:/<id>`):
 *   GET  /v2/sessions/{sessionId}/input-capabilities          → 200 capabilities
 *   POST /v2/sessions/{sessionId}/inputs                       → 202 {outcome:'accepted', receipt}
 *                                                                409 turn_closed | input_conflict, 429, 422, 400
 *   GET  /v2/sessions/{sessionId}/inputs/{inputId}?historyEpoch=&turnId=  → 200 {receipt} | 404 input_not_found
 * WebSocket JSON-RPC on /ahp (`params.channel` = the session URI):
 *   x-input/capabilities {channel}, x-input/submit {channel, inputId, target, content, ack?},
 *   x-input/status {channel, inputId, target}
 * Errors on the WebSocket carry `error.data = {outcome?, code, message, status}` with the HTTP
 * status the same refusal gets over HTTP.
 */
import { InputMethod } from '../../shared/protocol/steering.js';
import { z } from 'zod';
import { ProtocolError } from '../../shared/protocol/errors.js';
import type { CoarseKind } from '../../shared/protocol/error-kinds.js';
import { channelKind, sessionUri } from '../../shared/protocol/uris.js';
import type { Principal } from '../auth/auth.js';
import type { HubPort } from '../hub/hub-port.js';
import type { Feature, FeatureContext } from '../feature-contract.js';
import { httpBodyOf, readJsonBody, sendAccepted, sendJson } from '../transport/http-router.js';
import { SteeringEngine, type SteeringOptions } from './engine.js';
import { InputError, parseStatusQuery, parseSubmit, type InputSource } from './inputs.js';

/** The coarse kinds a steering refusal keeps on the WebSocket; every other one is `input_rejected`. */
const WS_KINDS: ReadonlySet<CoarseKind> = new Set(['invalid_params', 'permission_denied', 'session_not_found', 'not_found', 'limit_exceeded']);

/**
 * The kind a steering refusal has on the WebSocket (its JSON-RPC code follows): its coarse kind
 * when that is one a client acts on (a bad request, a viewer, a missing session or receipt, a
 * limit), else `input_rejected` with the finer name in `data.code`.
 */
export function inputErrorKind(err: InputError): CoarseKind {
  return WS_KINDS.has(err.family) ? err.family : 'input_rejected';
}

const sessionNotFound = (): InputError => new InputError('session_not_found', undefined, 'session not found');

/** Resolves a session the caller may see, or throws 404 session_not_found (other tenants' sessions do not exist for them). */
function visibleSession(hub: HubPort, principal: Principal, uri: string): string {
  if (channelKind(uri) !== 'session' || !hub.visibleSession(principal, uri)) throw sessionNotFound();
  return uri;
}

/** The door checks the principal's grants for steering (nothing is sequenced). */
function assertWriter(hub: HubPort, principal: Principal): void {
  const refused = hub.enter({ op: 'steer', principal });
  if (refused.outcome === 'rejected') throw new InputError(refused.kind, undefined, refused.message);
}

export function createSteeringFeature(options: SteeringOptions = {}): Feature {
  return {
    name: 'steering',
    install(ctx: FeatureContext) {
      const { hub, rpc, http, runner, logger, now } = ctx;
      const engine = new SteeringEngine(hub, logger, now, options);
      runner.setSteering(engine);
      engine.setAvailability((session) => runner.steeringUnavailable(session));
      const unsubscribe = hub.hook('steering', engine.hooks);

      const submit = async (principal: Principal, uri: string, body: unknown, source: InputSource) => {
        const session = visibleSession(hub, principal, uri);
        assertWriter(hub, principal);
        const request = parseSubmit(body);
        // Cluster mode: ordinal, quota and retries are decided against the cluster's inputs, so
        // the decision waits for the write turn (which folds every other node's acceptances first).
        const turn = hub.decisionTurn();
        if (turn) await turn;
        const result = await engine.submit(session, request, source);
        // The pending steering message is committed before the answer goes out, so a 202 means
        // every subscriber can already see the input as pending.
        if (!result.duplicate) await hub.drain();
        return result;
      };
      const status = async (principal: Principal, uri: string, inputId: unknown, target: unknown) => {
        const session = visibleSession(hub, principal, uri);
        const q = parseStatusQuery(inputId, target);
        const found = engine.status(session, q.inputId, q.target);
        if (found || !hub.sharesLog) return found;
        // Cluster mode: the input may have been accepted on another node a moment ago; taking the
        // write turn folds everything appended so far, so "not found" is then the cluster's answer.
        const turn = hub.decisionTurn();
        if (turn) await turn;
        return engine.status(session, q.inputId, q.target);
      };
      const notFound = (): InputError => new InputError('input_not_found', 'rejected', 'no receipt for this input and target in the retention window (current and last ended turn); this does not prove it was never applied');

      // ─── HTTP (an InputError is a ProtocolError: the router answers it with its body) ──
      http.add('GET', '/v2/sessions/{sessionId}/input-capabilities', (_req, res, c) => {
        const session = visibleSession(hub, c.principal, sessionUri(c.params['sessionId']!));
        sendJson(res, engine.capabilities(session));
      });
      http.add('POST', '/v2/sessions/{sessionId}/inputs', async (req, res, c) => {
        const uri = visibleSession(hub, c.principal, sessionUri(c.params['sessionId']!));
        assertWriter(hub, c.principal);
        let body: unknown;
        try {
          body = await readJsonBody(req);
        } catch (err) {
          if (err instanceof ProtocolError) throw new InputError(err.kind, 'rejected', err.message);
          throw err;
        }
        const result = await submit(c.principal, uri, body, 'http');
        sendAccepted(res, result);
      });
      http.add('GET', '/v2/sessions/{sessionId}/inputs/{inputId}', async (_req, res, c) => {
        const historyEpoch = c.url.searchParams.get('historyEpoch');
        const turnId = c.url.searchParams.get('turnId');
        const receipt = await status(c.principal, sessionUri(c.params['sessionId']!), c.params['inputId'], historyEpoch === null && turnId === null ? undefined : { historyEpoch, turnId });
        if (!receipt) throw notFound();
        sendJson(res, { receipt });
      });

      // ─── WebSocket JSON-RPC ─────────────────────────────────────────────
      const params = z.looseObject({ channel: z.string().min(1).max(1024) });
      // inputId and target are checked by parseStatusQuery, with the same messages as over HTTP.
      const statusParams = params.extend({ inputId: z.unknown().optional(), target: z.unknown().optional() });
      const rpcWrap = async <T>(fn: () => T | Promise<T>): Promise<T> => {
        try {
          return await fn();
        } catch (err) {
          if (err instanceof InputError) {
            const kind = inputErrorKind(err);
            throw new ProtocolError(kind, err.message, { ...httpBodyOf(err), status: err.status, kind });
          }
          throw err;
        }
      };
      rpc.request(InputMethod.Capabilities, {
        params,
        handle: (c, p) => rpcWrap(() => engine.capabilities(visibleSession(hub, c.principal, p.channel))),
      });
      rpc.request(InputMethod.Submit, {
        params,
        handle: (c, p) => rpcWrap(() => submit(c.principal, p.channel, p, 'ws')),
      });
      rpc.request(InputMethod.Status, {
        params: statusParams,
        handle: (c, p) =>
          rpcWrap(async () => {
            const receipt = await status(c.principal, p.channel, p.inputId, p.target);
            return receipt ? { receipt } : { receipt: null, ...httpBodyOf(notFound()) };
          }),
      });

      return { close: () => void unsubscribe() };
    },
  };
}

/** The feature `npm start` installs (default quota). Use `createSteeringFeature({quotaPerTurn})` to configure. */
export const steeringFeature: Feature = createSteeringFeature();

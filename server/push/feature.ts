/**
 * Web Push from the hub (issue 30, docs/notifications.md): a person's subscribed devices hear
 * of a question or a tool permission in a chat they can see, and a tool permission's Approve /
 * Deny answer from the notification through the same first-wins path as every other surface.
 *
 * - `GET    /api/push/key`                 `{ publicKey }` (VAPID, base64url)
 * - `POST   /api/push/subscriptions`       `PushSubscription.toJSON()` → 201 `{ id }`
 * - `GET    /api/push/subscriptions`       the caller's own devices
 * - `DELETE /api/push/subscriptions/{id}`  one of the caller's own devices → 204
 * - `POST   /api/push/actions`             `{ token, action }` from the service worker: no bearer,
 *                                          the token is the capability (action-token.ts)
 *
 * The keys and the subscriptions belong to the server, not a tenant (one `push-keys.json` and one
 * `push.db` in the data dir, rows keyed by tenant and user); each tenant's stack installs its own
 * notifier, and the public action route finds the token's tenant's notifier here.
 */
import type { Principal } from '../auth/auth.js';
import { checkJsonBounds } from '../../shared/protocol/json-bounds.js';
import { openInteractions } from '../../shared/state/selectors.js';
import type { Feature, FeatureContext } from '../feature-contract.js';
import { INTERACTIONS_SERVICE, type InteractionsService } from '../interactions/feature.js';
import type { Interaction } from '../interactions/interaction-model.js';
import type { InteractionRegistry } from '../interactions/registry.js';
import { COLLAB_PRESENCE_SERVICE, type PresenceService } from '../collab/presence.js';
import type { HubPort } from '../hub/hub-port.js';
import { ProtocolError, readJsonBody, sendCreated, sendJson, sendNoContent } from '../transport/http-router.js';
import { verifyActionToken } from './action-token.js';
import { loadOrCreatePushKeys, type PushKeys } from './keys.js';
import { type NotifierLimits, type OpenRequest, PushNotifier } from './notifier.js';
import { type PushSender, webPushSender } from './sender.js';
import { type PushLimits, PushSubscriptions, parseSubscriptionBody } from './subscriptions.js';
import { z } from 'zod';

export interface PushOptions {
  /** Where `push-keys.json` and `push.db` live; undefined keeps both in memory. */
  readonly dataDir?: string | undefined;
  /** The VAPID `sub` claim: a mailto: or https: contact for push services (default `mailto:push@ahp-hub.invalid`). */
  readonly subject?: string | undefined;
  readonly limits?: Partial<PushLimits>;
  readonly notifier?: Partial<NotifierLimits>;
  /** Replaces the web-push sender (unit tests). */
  readonly send?: PushSender;
}

export const DEFAULT_VAPID_SUBJECT = 'mailto:push@ahp-hub.invalid';
const SUBSCRIPTION_BODY_LIMIT = 8 * 1024;
const ACTION_BODY_LIMIT = 16 * 1024;

const actionBodySchema = z.object({ token: z.string().min(1).max(8_192), action: z.enum(['approve', 'deny']) }).strict();

interface TenantPush {
  readonly notifier: PushNotifier;
  readonly registry: InteractionRegistry | undefined;
  readonly hub: HubPort;
  readonly ctx: FeatureContext;
}

/** What a device's notification needs of an open interaction. */
export function openRequestOf(hub: Pick<HubPort, 'sessionEntry'>, it: Interaction): OpenRequest {
  const first = it.questions[0] as { message?: string; title?: string } | undefined;
  const title = typeof it.toolCall['title'] === 'string' ? it.toolCall['title'] : undefined;
  const question = it.kind === 'question' ? (title !== 'Questions for you' ? title : undefined) || first?.message || first?.title : undefined;
  return {
    session: it.session,
    sessionTitle: hub.sessionEntry(it.session)?.state.title,
    chat: it.chat,
    requestId: it.requestId,
    anchor: it.inputRequestId ?? it.toolCallId ?? it.requestId,
    requestKind: it.kind,
    tool: it.kind === 'permission' ? it.toolName : undefined,
    text: it.kind === 'permission' ? title : question,
  };
}

export function createPushFeature(options: PushOptions = {}): Feature {
  let shared: { keys: PushKeys; store: PushSubscriptions; send: PushSender; users: number } | undefined;
  const tenants = new Map<string, TenantPush>();
  const open = (): NonNullable<typeof shared> => {
    if (!shared) {
      const keys = loadOrCreatePushKeys(options.dataDir);
      shared = { keys, store: new PushSubscriptions(options.dataDir, options.limits), send: options.send ?? webPushSender(keys, options.subject ?? DEFAULT_VAPID_SUBJECT), users: 0 };
    }
    shared.users++;
    return shared;
  };
  return {
    name: 'push',
    install(ctx: FeatureContext) {
      ctx.http.reserveApiPrefix('/api/push');
      if (ctx.hub.sharesLog) {
        // Every node would push the same request, each from its own subscriptions: not yet (docs/notifications.md).
        const off = (): never => {
          throw new ProtocolError('push_unavailable', 'push notifications are not available in cluster mode yet (docs/notifications.md)');
        };
        for (const [method, path] of [
          ['GET', '/api/push/key'],
          ['POST', '/api/push/subscriptions'],
          ['GET', '/api/push/subscriptions'],
          ['DELETE', '/api/push/subscriptions/{id}'],
        ] as const)
          ctx.http.add(method, path, off);
        ctx.http.add('POST', '/api/push/actions', off, { public: true });
        return;
      }
      const s = open();
      const tenant = ctx.tenant ?? ctx.auth.tenants[0]!;
      const registry = (ctx.services.get(INTERACTIONS_SERVICE) as InteractionsService | undefined)?.registry;
      const presence = ctx.services.get(COLLAB_PRESENCE_SERVICE) as PresenceService | undefined;
      const notifier = new PushNotifier({
        tenant,
        store: s.store,
        send: s.send,
        tokenKey: s.keys.tokenKey,
        now: ctx.now,
        logger: ctx.logger,
        viewingVisibly: (chat, user) => presence?.viewingVisibly(chat, user) ?? false,
        limits: options.notifier,
      });
      const unwatch = registry?.watch({
        opened: (it) => notifier.opened(openRequestOf(ctx.hub, it)),
        resolved: (it) => notifier.resolved(it.chat, it.requestId),
      });
      // A notification from before a restart names a request the registry no longer knows: its
      // chat's state says when nothing is open any more (delivered phase: the answer is durable).
      const settleIfClosed = (chat: string): void => {
        if (!notifier.watches(chat)) return;
        const entry = ctx.hub.chatEntry(chat);
        if (!entry || openInteractions(entry.state).length === 0) notifier.chatSettled(chat);
      };
      const unhook = ctx.hub.hook('push', { afterDurable: (e) => settleIfClosed(e.channel), chatDisposed: (e) => settleIfClosed(e.chat) });
      const mine: TenantPush = { notifier, registry, hub: ctx.hub, ctx };
      tenants.set(tenant, mine);
      ctx.metrics.gauge('ahp_hub_push_sent', 'Push messages the push services took, since start.', () => notifier.counters.sent);
      ctx.metrics.gauge('ahp_hub_push_failed', 'Push attempts that failed (each retry counts), since start.', () => notifier.counters.failed);
      ctx.metrics.gauge('ahp_hub_push_gone', 'Subscriptions removed because the push service answered 404/410, since start.', () => notifier.counters.gone);
      ctx.metrics.gauge('ahp_hub_push_rate_limited', 'Notifications not sent because a user reached the push rate limit, since start.', () => notifier.counters.rateLimited);

      ctx.http.add('GET', '/api/push/key', (_req, res) => sendJson(res, { publicKey: s.keys.publicKey }));

      ctx.http.add('POST', '/api/push/subscriptions', async (req, res, hc) => {
        refuseAgents(hc.principal);
        const body = await readJsonBody(req, SUBSCRIPTION_BODY_LIMIT);
        const bounds = checkJsonBounds(body);
        if (bounds) throw new ProtocolError('push_subscription_invalid', bounds.message);
        const parsed = parseSubscriptionBody(body);
        if (!parsed.ok) throw new ProtocolError('push_subscription_invalid', `not a PushSubscription: ${parsed.message}`);
        const added = s.store.add(hc.principal, parsed.value, ctx.now());
        if (!added.ok) {
          throw new ProtocolError('push_subscriptions_exceeded', added.limit === 'user' ? `at most ${added.max} push subscriptions (devices) per user: remove one first` : `this tenant holds its limit of ${added.max} push subscriptions`);
        }
        if (added.created) sendCreated(res, { id: added.subscription.id });
        else sendJson(res, { id: added.subscription.id });
      });

      ctx.http.add('GET', '/api/push/subscriptions', (_req, res, hc) => {
        const subs = s.store.ofUser(hc.principal.tenant, hc.principal.user);
        sendJson(res, { subscriptions: subs.map((x) => ({ id: x.id, endpoint: x.endpoint, createdAt: new Date(x.createdAt).toISOString() })) });
      });

      ctx.http.add('DELETE', '/api/push/subscriptions/{id}', (_req, res, hc) => {
        if (!s.store.removeOwn(hc.principal.tenant, hc.principal.user, hc.params['id']!)) throw new ProtocolError('push_subscription_not_found', `you have no push subscription ${hc.params['id']}`);
        sendNoContent(res, { 'cache-control': 'no-store' });
      });

      ctx.http.add(
        'POST',
        '/api/push/actions',
        async (req, res) => {
          const body = await readJsonBody(req, ACTION_BODY_LIMIT);
          const parsed = actionBodySchema.safeParse(body);
          if (!parsed.success) throw new ProtocolError('invalid_params', 'send { "token": "<actionToken from the notification>", "action": "approve" | "deny" }');
          const outcome = await answerFromNotification(parsed.data.token, parsed.data.action, s, tenants);
          sendJson(res, outcome);
        },
        { public: true },
      );

      return {
        close: () => {
          unwatch?.();
          unhook();
          notifier.close();
          if (tenants.get(tenant) === mine) tenants.delete(tenant);
          if (shared && --shared.users === 0) {
            shared.store.close();
            shared = undefined;
          }
        },
      };
    },
  };
}

function refuseAgents(p: Principal): void {
  if (p.role === 'agent') throw new ProtocolError('permission_denied', 'agent tokens cannot subscribe to push notifications');
}

/** Approve / Deny from a notification: the token names who answers which request from which device. */
export async function answerFromNotification(
  token: string,
  action: 'approve' | 'deny',
  s: { keys: PushKeys; store: PushSubscriptions },
  tenants: ReadonlyMap<string, TenantPush>,
): Promise<{ ok: true; action: 'approve' | 'deny'; requestId: string }> {
  const t = tenants.values().next().value as TenantPush | undefined;
  const checked = verifyActionToken(s.keys.tokenKey, token, t?.ctx.now() ?? Date.now());
  if (!checked.ok) {
    throw checked.reason === 'expired' ? new ProtocolError('push_token_expired', 'this notification has expired: open the chat to answer') : new ProtocolError('push_token_invalid', 'the action token is not one this hub issued');
  }
  const c = checked.claims;
  const here = tenants.get(c.tenant);
  if (!here) throw new ProtocolError('push_token_invalid', 'the action token is not one this hub issued');
  const sub = s.store.get(c.sub);
  if (!sub || sub.tenant !== c.tenant || sub.user !== c.user) throw new ProtocolError('permission_denied', 'this device is no longer subscribed: open the chat to answer');
  if (sub.role === 'viewer') throw new ProtocolError('permission_denied', 'read-only access: viewers cannot answer permission requests');
  if (here.ctx.auth.knowsUser && !here.ctx.auth.knowsUser(c.tenant, c.user)) throw new ProtocolError('permission_denied', 'this user has no token on this hub any more');
  if (!here.registry) throw new ProtocolError('not_enabled', 'permission replies are not enabled on this hub');
  const found = here.registry.lookup(c.session, c.req);
  if (found.state !== 'pending' || found.interaction.chat !== c.chat) throw new ProtocolError('already_answered', 'this request was already answered (or is no longer open)');
  const it = found.interaction;
  if (it.kind !== 'permission') throw new ProtocolError('action_refused', 'a question is answered in the app, not from the notification');
  const kinds = action === 'approve' ? ['allow_once', 'allow_always'] : ['reject_once', 'reject_always'];
  const option = kinds.map((k) => it.options.find((o) => o.kind === k)).find((o) => o !== undefined);
  if (!option) throw new ProtocolError('action_refused', `this request offers no ${action} option`);
  const principal: Principal = { user: sub.user, tenant: sub.tenant, role: sub.role as Principal['role'] };
  const result = await here.registry.reply(principal, c.session, c.req, { outcome: { outcome: 'selected', optionId: option.optionId } }, `push notification (device ${sub.id})`);
  if (result.kind === 'accepted') return { ok: true, action, requestId: c.req };
  if (result.kind === 'notAccepted') throw new ProtocolError('already_answered', 'this request was already answered (or is no longer open)');
  throw new ProtocolError(result.code, result.message);
}

/**
 * The editor bridge: an ACP *agent* on a byte stream (stdio) that is a live view of one hub
 * session, so an ACP client (an editor) works in the same chat as browser tabs and other clients.
 *
 * - The editor's `session/new` / `session/load` attach to the hub session (its id is the ACP
 *   session id); `session/prompt` starts an AHP turn on the session's default chat and answers
 *   with the turn's stop reason; `session/cancel` cancels the running turn.
 * - Every action on that chat (whoever caused it) streams to the editor as `session/update`.
 * - A tool waiting for confirmation becomes `session/request_permission`; an input request becomes
 *   `elicitation/create` (when the editor supports it). The hub decides who answered first: an
 *   editor answer that arrives second is not applied, and the editor is told so in a
 *   `tool_call_update` / message; when someone else answers while the editor's request is open,
 *   that request is cancelled (`$/cancel_request`) and the editor is told who won.
 * - Steering through the seed-003 ACP extension (`_tansr.com/session/*`), backed by the hub's
 *   `x-input/*` methods with their real receipts.
 * - ACP multi-client attach (RFD #533, attach.ts): `session/attach` as controller or observer with
 *   a history policy, `session/detach`; attached editors are in the chat's presence room
 *   (roster.ts) and get `permission_resolved` / `client_disconnected`.
 */
import { randomUUID } from 'node:crypto';
import * as acp from '@agentclientprotocol/sdk';
import WebSocket from 'ws';
import { AhpClient, AhpRequestError, type ChannelView, type ChatState } from '../../shared/client/ahp-client.js';
import { SessionInputs, type InputSubmission, type InputTarget } from '../../shared/client/session-inputs.js';
import { isKnownAction, type InputCompletedAction, type ToolCallConfirmedAction } from '../../shared/protocol/actions.js';
import { asSessionUri, sessionIdOf } from '../../shared/protocol/uris.js';
import { findEndedTurn, openInteractions, turnDuration } from '../../shared/state/selectors.js';
import type { WireAction } from '../../shared/protocol/messages.js';
import type { ChatInputRequest, PendingConfirmationToolCall } from '../../shared/protocol/state.js';
import { acpOptionKind, acpToolKind, acpUpdatesFor, rawInputOf, STEERING_EXTENSION as HOSTED_STEERING_EXTENSION, turnEndReasonOf } from '../../server/acp-mapping/index.js';
import { ATTACH_METHOD, attachErrors, clientDisconnected, DETACH_METHOD, historyItems, parseAttachParams, parseDetachParams, permissionResolved, rolesFor } from './attach.js';
import { AttachRoster, type AttachRole } from './roster.js';
import { answersOf, schemaOf } from './forms.js';
import { historyUpdates, pendingUpdates } from './history.js';

/** The seed-003 mid-turn input extension (the same names the hub uses towards hosted agents), advertised in `agentCapabilities._meta`. */
export const STEERING_EXTENSION = { ...HOSTED_STEERING_EXTENSION, version: 1 } as const;

export interface BridgeOptions {
  readonly url: string;
  /** The hub session id (path part of `ahp-session:/<id>`) or the full URI. */
  readonly session: string;
  readonly token?: string | undefined;
  readonly stream: acp.Stream;
  /** Diagnostics (stderr in the CLI); never the ACP stream. */
  readonly log?: (line: string) => void;
  /** `false`: the hub connection is not re-opened when it drops (the SDK's `reconnect` option; default: reconnect). */
  readonly reconnect?: false;
}

export interface Bridge {
  readonly closed: Promise<void>;
  close(): void;
}

type Outcome = { kind: 'answered'; by: 'editor' | 'elsewhere'; summary: string };

/**
 * The actions after which an interaction can be open that was not before: a tool awaiting
 * confirmation (`toolCallReady`, or a part appended already blocking) and an input request (new,
 * appended as a part, or left unanswered in a turn that `turnResume` brings back). Only after these
 * are the turn's parts scanned again (not after every streamed delta).
 */
const MAY_OPEN_INTERACTION: ReadonlySet<string> = new Set(['chat/toolCallReady', 'chat/inputRequested', 'chat/responsePart', 'chat/turnResume']);

export async function startAcpBridge(options: BridgeOptions): Promise<Bridge> {
  const log = options.log ?? (() => undefined);
  const sessionUri = asSessionUri(options.session);
  const sessionId = sessionIdOf(sessionUri);
  const client = new AhpClient({
    url: options.url,
    createSocket: (u) => new WebSocket(u),
    ...(options.token !== undefined && { token: options.token }),
    ...(options.reconnect === false && { reconnect: false as const }),
    clientInfo: { name: 'ahp-hub-acp-bridge' },
  });
  await client.connect();
  let defaultChat: string | undefined;
  try {
    defaultChat = (await client.subscribe(sessionUri as `ahp-session:/${string}`)).state.defaultChat;
  } catch (err) {
    if (!(err instanceof AhpRequestError && err.kind === 'session_not_found')) throw err;
    defaultChat = (await client.createSession({ session: sessionUri, title: 'ACP editor session' })).defaultChat;
  }
  if (!defaultChat) throw new Error(`session ${sessionUri} has no default chat`);
  const view: ChannelView<ChatState> = await client.subscribe(defaultChat as `ahp-chat:/${string}`);
  const inputs = new SessionInputs(client, sessionUri);
  const principal = (client.initializeResult?._meta as Record<string, unknown> | undefined)?.['hub/principal'] as { user?: string; role?: string } | undefined;
  const hubRole = principal?.role;
  const roster = new AttachRoster(
    client,
    defaultChat,
    (left) => {
      if (notices) notify(clientDisconnected(left, new Date()));
    },
    log,
  );
  const attachable = await roster.join();

  let editorCaps: acp.ClientCapabilities | undefined;
  /** How answers from this editor are attributed ("from Zed"): its `clientInfo`, sanitised as the hub requires. */
  let editorName = 'ACP editor';
  let attached = false;
  /** The role this editor acts in (ACP v1's session/new, load and resume control; session/attach chooses). */
  let role: AttachRole = 'controller';
  /** The editor attached with session/attach: it gets the RFD's notices (permission_resolved, client_disconnected). */
  let notices = false;
  let editorInfo: { name: string; version?: string; title?: string } = { name: 'acp-editor' };
  /** Open interactions an editor attached with historyPolicy "none" is not asked about (they predate it). */
  const skipped = new Set<string>();
  /** The ACP options offered for each pending tool (so permission_resolved names the option that won). */
  const offered = new Map<string, ReturnType<typeof permissionOptions>>();
  /** Open editor requests for hub interactions: key → abort + how it ended. */
  const asked = new Map<string, { abort: AbortController; outcome?: Outcome }>();
  const turnWaiters = new Set<() => void>();

  const app = acp
    .agent({ name: 'ahp-hub-bridge' })
    .onRequest(acp.methods.agent.initialize, ({ params }) => {
      editorCaps = params.clientCapabilities;
      editorName = surfaceName(params.clientInfo) ?? editorName;
      if (params.clientInfo) editorInfo = infoOf(params.clientInfo);
      return {
        protocolVersion: acp.PROTOCOL_VERSION,
        agentInfo: { name: 'ahp-hub-bridge', title: 'AHP hub session', version: '0.1.0' },
        agentCapabilities: {
          loadSession: true,
          sessionCapabilities: { list: {}, resume: {}, close: {}, ...(attachable && { attach: { roles: rolesFor(hubRole) } }) },
          _meta: { [STEERING_EXTENSION.metaKey]: { midTurnInput: STEERING_EXTENSION.version } },
        },
      };
    })
    .onRequest(acp.methods.agent.session.new, () => {
      attach(keptRole());
      return { sessionId };
    })
    .onRequest(acp.methods.agent.session.load, async ({ params }) => {
      checkSession(params.sessionId);
      // ACP: the whole conversation is replayed as session/update notifications before the answer.
      // Queued in order before live updates start flowing, then awaited.
      const replay = historyUpdates(view.confirmed).map((update) => editor.notify(acp.methods.client.session.update, { sessionId, update: update as acp.SessionUpdate }));
      attach(keptRole());
      await Promise.all(replay);
      return {};
    })
    .onRequest(acp.methods.agent.session.resume, ({ params }) => {
      checkSession(params.sessionId);
      attach(keptRole());
      return {};
    })
    .onRequest(acp.methods.agent.session.list, () => {
      const title = (client.view(sessionUri) as ChannelView<{ title?: string }> | undefined)?.state.title;
      return { sessions: [{ sessionId, cwd: '/', ...(title ? { title } : {}), ...(view.confirmed.modifiedAt ? { updatedAt: view.confirmed.modifiedAt } : {}) }] };
    })
    .onRequest(acp.methods.agent.session.close, async ({ params }) => {
      checkSession(params.sessionId);
      // As ACP asks: ongoing work is cancelled; the hub session itself stays for its other clients.
      const active = view.confirmed.activeTurn;
      if (active) await view.dispatch({ type: 'chat/turnCancelled', turnId: active.id, duration: turnDuration(active.startedAt, Date.now()) });
      detach('the editor closed the session');
      return {};
    })
    .onRequest(
      ATTACH_METHOD,
      (p: unknown) => parseAttachParams(p),
      async ({ params }) => {
        if (!attachable) throw attachErrors.noCapability();
        if (params.sessionId !== sessionId || client.view(sessionUri) === undefined) throw attachErrors.sessionNotFound(params.sessionId);
        if (!rolesFor(hubRole).includes(params.role)) throw attachErrors.notAuthorised(`this hub token has read-only access (${hubRole}); attach as observer`, { role: params.role, allowedRoles: rolesFor(hubRole) });
        if (params.clientInfo) {
          editorInfo = infoOf(params.clientInfo);
          editorName = surfaceName(params.clientInfo) ?? editorName;
        }
        const chat = view.confirmed;
        const history = historyItems(chat, params.historyPolicy);
        const connectedClients = roster.others();
        let replay: Array<Promise<void>> = [];
        skipped.clear();
        if (params.historyPolicy === 'full') replay = historyUpdates(chat).map((update) => editor.notify(acp.methods.client.session.update, { sessionId, update: update as acp.SessionUpdate }));
        else if (params.historyPolicy === 'pending_only') replay = pendingUpdates(chat).map((update) => editor.notify(acp.methods.client.session.update, { sessionId, update: update as acp.SessionUpdate }));
        else for (const open of openInteractions(chat)) skipped.add(open.kind === 'toolConfirmation' ? `tool:${open.toolCall.toolCallId}` : `input:${open.request.id}`);
        notices = true;
        attach(params.role);
        await Promise.all(replay);
        return { sessionId, role: params.role, ...(history !== undefined && { history }), connectedClients };
      },
    )
    .onRequest(
      DETACH_METHOD,
      (p: unknown) => parseDetachParams(p),
      ({ params }) => {
        if (params.sessionId !== sessionId) throw attachErrors.sessionNotFound(params.sessionId);
        detach('the editor detached');
        return { sessionId, status: 'detached' };
      },
    )
    .onRequest(acp.methods.agent.session.prompt, async ({ params }) => {
      checkSession(params.sessionId);
      if (role === 'observer') throw attachErrors.notAuthorised('observers cannot prompt', { role });
      const busy = view.confirmed.activeTurn;
      if (busy) throw acp.RequestError.invalidRequest({ turnId: busy.id }, `a turn is already running in this hub chat (${busy.id}); wait for it, cancel it, or add to it with ${STEERING_EXTENSION.steer}`);
      const text = params.prompt.map((b) => (b.type === 'text' ? b.text : b.type === 'resource_link' ? b.uri : '')).join('');
      const turnId = `turn-${randomUUID()}`;
      const started = await view.dispatch({ type: 'chat/turnStarted', turnId, startedAt: new Date().toISOString(), message: { text, origin: { kind: 'user' } } });
      if (!started.accepted) {
        // The hub's kind of refusal (error-kinds.ts) travels in data.kind, as on every other surface.
        const kind = started.envelope?.rejectionKind;
        throw acp.RequestError.invalidRequest({ reason: started.reason, ...(kind !== undefined && { kind }) }, `the hub refused the turn: ${started.reason}`);
      }
      const turn = await waitForTurnEnd(turnId);
      if (turn.state === 'complete') return { stopReason: 'end_turn' as const };
      if (turn.state === 'cancelled') return { stopReason: 'cancelled' as const };
      const errorType = turn.error?.errorType ?? 'error';
      if (errorType === 'refusal' || errorType === 'max_tokens' || errorType === 'max_turn_requests') return { stopReason: errorType };
      throw acp.RequestError.internalError({ errorType, message: turn.error?.message }, turn.error?.message ?? 'the turn failed');
    })
    .onNotification(acp.methods.agent.session.cancel, async ({ params }) => {
      if (params.sessionId !== sessionId) return;
      if (role === 'observer') {
        log('session/cancel from an observer ignored (observers cannot cancel)');
        return;
      }
      const active = view.confirmed.activeTurn;
      if (!active) return;
      await view.dispatch({ type: 'chat/turnCancelled', turnId: active.id, duration: turnDuration(active.startedAt, Date.now()) });
    })
    .onRequest(
      STEERING_EXTENSION.capabilities,
      (p: unknown) => p as { sessionId: string },
      async ({ params }) => {
        checkSession(params.sessionId);
        return inputs.inputCapabilities();
      },
    )
    .onRequest(
      STEERING_EXTENSION.steer,
      (p: unknown) => p as { sessionId: string } & InputSubmission,
      async ({ params }) => {
        checkSession(params.sessionId);
        if (role === 'observer') throw attachErrors.notAuthorised('observers cannot add input to a turn', { role });
        const { inputId, target, content, ack } = params;
        return inputs.submitInput({ inputId, target, content, ...(ack !== undefined && { ack }) });
      },
    )
    .onRequest(
      STEERING_EXTENSION.status,
      (p: unknown) => p as { sessionId: string; inputId: string; target: InputTarget },
      async ({ params }) => {
        checkSession(params.sessionId);
        return { receipt: await inputs.getInputStatus(params.inputId, params.target) };
      },
    );

  const connection = app.connect(options.stream);
  const editor = connection.client;

  /** The editor now follows the chat: live updates flow, and every open question or permission is asked. */
  function attach(as?: AttachRole): void {
    attached = true;
    // ACP v1's methods leave enforcement to the hub (a viewer's prompt is refused there, as on
    // every surface); the presence room shows what the principal may do.
    role = as ?? 'controller';
    roster.set({ ...editorInfo, role: as ?? rolesFor(hubRole)[0] ?? 'observer' });
    queueMicrotask(() => askOpenInteractions());
  }

  /** The attached editor an answered-by stamp names: this one, or another in the presence room. */
  function answeredFrom(surface: string, user: string): { name: string; version?: string } | undefined {
    if (attached && surface === editorName && user === principal?.user) return editorInfo;
    return roster.bySurface(surface, user);
  }

  /** A role chosen with session/attach is fixed (RFD #533): session/new, load or resume afterwards keep it. */
  function keptRole(): AttachRole | undefined {
    return notices ? role : undefined;
  }

  /** The editor stops following (session/close, session/detach): it leaves the presence room and its open requests are withdrawn. */
  function detach(reason: string): void {
    attached = false;
    notices = false;
    roster.set(null);
    withdrawAll(reason);
  }

  function checkSession(id: string): void {
    if (id !== sessionId) throw acp.RequestError.sessionNotFound(id);
  }

  function waitForTurnEnd(turnId: string): Promise<ChatState['turns'][number]> {
    return new Promise((resolve, reject) => {
      const check = (): void => {
        const turn = findEndedTurn(view.confirmed, turnId);
        if (turn) {
          turnWaiters.delete(check);
          resolve(turn);
        } else if (connection.signal.aborted) {
          turnWaiters.delete(check);
          reject(new Error('the editor connection closed'));
        }
      };
      turnWaiters.add(check);
      check();
    });
  }

  const notify = (update: Record<string, unknown>): void => {
    if (!attached) return;
    void editor.notify(acp.methods.client.session.update, { sessionId, update: update as acp.SessionUpdate }).catch((err: unknown) => log(`update not delivered: ${String(err)}`));
  };

  view.onChange((_v, change) => {
    if (change.type !== 'envelope' || change.envelope.rejectionReason) return;
    const action = change.envelope.action;
    // The hub sends only actions it validated, so a known type has its schema's shape.
    const known = isKnownAction(action) ? action : undefined;
    for (const update of acpUpdatesFor(known)) notify(update);
    if (known?.type === 'chat/toolCallConfirmed' && notices) notify(permissionResolved(known, offered.get(known.toolCallId), answeredFrom));
    if (known?.type === 'chat/toolCallConfirmed' || known?.type === 'chat/inputCompleted') settleAnswered(known);
    if (turnEndReasonOf(action.type) !== 'other') withdrawAll('the turn ended');
    if (MAY_OPEN_INTERACTION.has(action.type)) askOpenInteractions();
    for (const check of [...turnWaiters]) check();
  });

  /** Someone answered a hub interaction: close the editor's request for it (if still open) and say who. */
  function settleAnswered(action: AnswerAction): void {
    const key = action.type === 'chat/toolCallConfirmed' ? `tool:${action.toolCallId}` : `input:${action.requestId}`;
    const open = asked.get(key);
    if (!open || open.outcome) return;
    const summary = describeDecision(action);
    open.outcome = { kind: 'answered', by: 'elsewhere', summary };
    open.abort.abort(acp.RequestError.requestCancelled({ reason: 'answered elsewhere' }, `answered in another client: ${summary}`));
    tellEditor(key, `Answered in another client first: ${summary}. Your request was withdrawn.`);
  }

  /** The turn is over: open editor requests are withdrawn and the book is cleared (it never outlives a turn). */
  function withdrawAll(reason: string): void {
    for (const entry of asked.values()) {
      if (entry.outcome) continue;
      entry.outcome = { kind: 'answered', by: 'elsewhere', summary: reason };
      entry.abort.abort(acp.RequestError.requestCancelled({ reason }, reason));
    }
    asked.clear();
    offered.clear();
    skipped.clear();
  }

  /** An observer answered: nothing is applied, and the editor gets the RFD's not-authorised error in the update's `_meta["hub/refused"]`. */
  function refuseObserver(key: string, why: string): void {
    const err = attachErrors.notAuthorised(why, { role });
    tellEditor(key, `Your answer was not applied: ${err.message}.`, { 'hub/refused': { code: err.code, message: err.message, data: err.data } });
  }

  function tellEditor(key: string, text: string, meta: Record<string, unknown> = {}): void {
    if (key.startsWith('tool:')) {
      notify({ sessionUpdate: 'tool_call_update', toolCallId: key.slice(5), content: [{ type: 'content', content: { type: 'text', text } }], _meta: { ...meta, 'hub/outcome': text } });
    } else {
      notify({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: `\n${text}\n` }, _meta: { ...meta, 'hub/outcome': text } });
    }
  }

  /** Asks the editor about every open hub interaction it has not been asked about yet. */
  function askOpenInteractions(): void {
    if (!attached) return;
    const turn = view.confirmed.activeTurn;
    if (!turn) return;
    for (const open of openInteractions(view.confirmed)) {
      if (open.kind === 'toolConfirmation') {
        const key = `tool:${open.toolCall.toolCallId}`;
        if (!offered.has(open.toolCall.toolCallId)) offered.set(open.toolCall.toolCallId, permissionOptions(open.toolCall));
        if (!asked.has(key) && !skipped.has(key)) void askPermission(key, turn.id, open.toolCall);
      } else if (editorCaps?.elicitation) {
        const key = `input:${open.request.id}`;
        if (!asked.has(key) && !skipped.has(key)) void askInput(key, open.request);
      }
    }
  }

  async function askPermission(key: string, turnId: string, tool: PendingConfirmationToolCall): Promise<void> {
    const abort = new AbortController();
    const entry: { abort: AbortController; outcome?: Outcome } = { abort };
    asked.set(key, entry);
    const options = permissionOptions(tool);
    let answer: acp.RequestPermissionResponse;
    try {
      answer = await editor.request(
        acp.methods.client.session.requestPermission,
        {
          sessionId,
          toolCall: { toolCallId: tool.toolCallId, title: tool.confirmationTitle ?? tool.displayName, kind: acpToolKind(tool.toolName), status: 'pending', rawInput: rawInputOf(tool.toolInput) },
          options: options.map(({ optionId, name, kind }) => ({ optionId, name, kind })),
          ...(role === 'observer' && { _meta: { 'hub/role': 'observer' } }),
        },
        { cancellationSignal: abort.signal, stopWaitingOnCancel: true },
      );
    } catch (err) {
      if (!entry.outcome) log(`permission request failed: ${String(err)}`);
      return;
    }
    if (entry.outcome) {
      tellEditor(key, `Your answer was not applied: another client answered first (${entry.outcome.summary}).`);
      return;
    }
    if (role === 'observer') {
      if (answer.outcome.outcome === 'selected') refuseObserver(key, 'observers cannot answer permission requests');
      return;
    }
    const chosen = answer.outcome.outcome === 'selected' ? options.find((o) => o.optionId === (answer.outcome as { optionId: string }).optionId) : undefined;
    const selected = chosen?.ahpId !== undefined ? { selectedOptionId: chosen.ahpId } : {};
    const action: ToolCallConfirmedAction =
      chosen && (chosen.kind === 'allow_once' || chosen.kind === 'allow_always')
        ? { type: 'chat/toolCallConfirmed', turnId, toolCallId: tool.toolCallId, approved: true, confirmed: 'user-action', ...selected, _meta: { 'hub/client': editorName } }
        : { type: 'chat/toolCallConfirmed', turnId, toolCallId: tool.toolCallId, approved: false, reason: chosen ? 'denied' : 'skipped', ...selected, _meta: { 'hub/client': editorName } };
    entry.outcome = { kind: 'answered', by: 'editor', summary: describeDecision(action) };
    const result = await view.dispatch(action);
    if (!result.accepted) tellEditor(key, `Your answer was not applied: another client answered first (${result.reason}).`);
  }

  async function askInput(key: string, request: ChatInputRequest): Promise<void> {
    const abort = new AbortController();
    const entry: { abort: AbortController; outcome?: Outcome } = { abort };
    asked.set(key, entry);
    const questions = request.questions ?? [];
    const params: Record<string, unknown> = request.url
      ? { sessionId, mode: 'url', message: request.message ?? 'Open this link', url: request.url, elicitationId: request.id }
      : { sessionId, mode: 'form', message: request.message ?? 'The agent asks for input', requestedSchema: schemaOf(questions) };
    if (role === 'observer') params['_meta'] = { 'hub/role': 'observer' };
    let answer: acp.CreateElicitationResponse;
    try {
      answer = await editor.request(acp.methods.client.elicitation.create, params as acp.CreateElicitationRequest, { cancellationSignal: abort.signal, stopWaitingOnCancel: true });
    } catch (err) {
      if (!entry.outcome) log(`elicitation failed: ${String(err)}`);
      return;
    }
    if (entry.outcome) {
      tellEditor(key, `Your answer was not applied: another client answered first (${entry.outcome.summary}).`);
      return;
    }
    if (role === 'observer') {
      if (answer.action !== 'cancel') refuseObserver(key, 'observers cannot answer questions');
      return;
    }
    const response = answer.action === 'accept' ? 'accept' : answer.action === 'decline' ? 'decline' : 'cancel';
    const action: WireAction = { type: 'chat/inputCompleted', requestId: request.id, response, _meta: { 'hub/client': editorName } };
    const content = (answer as { content?: Record<string, unknown> | null }).content;
    if (response === 'accept' && content) action['answers'] = answersOf(questions, content);
    entry.outcome = { kind: 'answered', by: 'editor', summary: response };
    const result = await view.dispatch(action);
    if (!result.accepted) tellEditor(key, `Your answer was not applied: ${result.reason}.`);
  }

  const close = (): void => {
    connection.close();
    roster.close();
    client.close();
  };
  void connection.closed.then(() => {
    for (const check of [...turnWaiters]) check();
    roster.close();
    client.close();
  });
  return { closed: connection.closed, close };
}

/** The editor's name as the hub accepts it in `_meta["hub/client"]` (answers then say "from Zed"). */
function surfaceName(info: { name?: string; title?: string | null } | null | undefined): string | undefined {
  const raw = (info?.title || info?.name || '')
    .replace(/[^\w .-]/g, ' ')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 40);
  return raw === '' ? undefined : raw;
}

/** An editor's `clientInfo` as announced in the presence room (name, version, title). */
function infoOf(info: { name?: string; version?: string; title?: string | null }): { name: string; version?: string; title?: string } {
  const name = (info.name ?? '').slice(0, 200) || 'acp-editor';
  return { name, ...(info.version && { version: String(info.version).slice(0, 100) }), ...(info.title && { title: info.title.slice(0, 200) }) };
}

/** ACP options for a pending AHP tool: the tool's own options (an ACP agent's kinds kept), else allow / reject. */
function permissionOptions(tool: PendingConfirmationToolCall): Array<acp.PermissionOption & { ahpId?: string }> {
  // Any relayed string kind is passed on to the editor as the agent gave it.
  const own = (tool.options ?? []).map((o) => ({ optionId: o.id, name: o.label, kind: acpOptionKind(o, (kind) => typeof kind === 'string'), ahpId: o.id }));
  if (!own.some((o) => o.kind === 'allow_once' || o.kind === 'allow_always')) own.push({ optionId: 'hub-allow', name: 'Allow', kind: 'allow_once' } as (typeof own)[number]);
  if (!own.some((o) => o.kind === 'reject_once' || o.kind === 'reject_always')) own.push({ optionId: 'hub-reject', name: 'Reject', kind: 'reject_once' } as (typeof own)[number]);
  return own.map((o) => (o.ahpId === undefined ? { optionId: o.optionId, name: o.name, kind: o.kind } : o));
}

/** An answer someone gave in another client: a tool confirmation or a completed input request. */
type AnswerAction = ToolCallConfirmedAction | InputCompletedAction;

function describeDecision(action: AnswerAction): string {
  if (action.type === 'chat/inputCompleted') return action.response;
  if (action.approved) return 'approved';
  return action.reason === 'skipped' ? 'skipped' : 'denied';
}

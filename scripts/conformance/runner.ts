/**
 * The one interpreter of conformance cases (`case-format.ts`): it gives every actor its own
 * fault proxy in front of the hub, runs the case's steps, then checks the invariants the case
 * names against the hub's own answers, read on a connection that bypasses every proxy.
 *
 * A case passes when every invariant holds and it ended in one of its allowed outcomes. In
 * planted mode the actors get the case's planted flaws (or the hub loses its data on restart),
 * and the case must then fail on the invariant the plant names.
 */
import { randomUUID } from 'node:crypto';
import { Actor, RpcFailure, type Operation } from './actor.js';
import type { ChannelRef, ConformanceCase, Step } from './case-format.js';
import { FaultProxy } from './fault-proxy.js';
import type { HubHost } from './hosts.js';
import { HttpActor } from './http-actor.js';
import { BridgeActor } from './bridge-actor.js';
import type { CaseContext, CaseResult, CaseSession } from './case-types.js';
import { defaultChatOf, describeMatch, draftAction, frameMatches, isSayMarker, until } from './case-match.js';
import { checkInvariants } from './case-invariants.js';

export type { CaseResult } from './case-types.js';
export { draftAction, firstDifference, until } from './case-match.js';

/**
 * How long a step waits for something the hub should cause (an answer, a turn's end, an event)
 * before the case goes on to its invariants, which then report what is missing. A planted run
 * expects something to be missing, so it waits less.
 */
const SOFT_WAIT_MS = { honest: 15_000, planted: 1_500 };

class StepFailure extends Error {}

export class CaseRun implements CaseContext {
  readonly actors = new Map<string, Actor>();
  readonly http = new Map<string, HttpActor>();
  readonly bridges = new Map<string, BridgeActor>();
  readonly proxies = new Map<string, FaultProxy>();
  readonly sessions = new Map<string, CaseSession>();
  readonly nonce = randomUUID().slice(0, 8);
  /** Outcomes of requests whose answer may be lost (createSession): key → what the client ended up knowing. */
  readonly requestOutcomes = new Map<string, 'created' | 'found-existing' | 'unknown' | 'created-twice'>();
  outcome = 'completed';
  readonly #tokens = new Map<string, string | undefined>();
  /** The proxy rules the case set, by name. */
  readonly #ruleNames = new Set<string>();
  /** Concrete tokens by handle, remembered so a revoked one can still be presented. */
  readonly #tokenByHandle = new Map<string, string | undefined>();

  constructor(
    readonly spec: ConformanceCase,
    readonly host: HubHost,
    readonly planted: boolean,
  ) {}

  get softWaitMs(): number {
    return this.planted ? SOFT_WAIT_MS.planted : SOFT_WAIT_MS.honest;
  }

  marker(op: string): string {
    return `${op}-${this.nonce}`;
  }

  async proxyOf(actor: string): Promise<FaultProxy> {
    let p = this.proxies.get(actor);
    if (!p) {
      p = await FaultProxy.start(this.host.target);
      this.proxies.set(actor, p);
    }
    return p;
  }

  actor(name: string): Actor {
    let a = this.actors.get(name);
    if (!a) {
      a = new Actor(name, this.planted ? (this.spec.planted.flaws?.[name] ?? {}) : {});
      this.actors.set(name, a);
    }
    return a;
  }

  tokenFor(handle: string | undefined): string | undefined {
    if (handle === undefined) return this.host.token(this.spec.tokens?.[0]);
    if (!this.#tokenByHandle.has(handle)) this.#tokenByHandle.set(handle, this.host.token(handle));
    return this.#tokenByHandle.get(handle);
  }

  tokenOf(actor: string): string | undefined {
    return this.#tokens.has(actor) ? this.#tokens.get(actor) : this.tokenFor(undefined);
  }

  channel(ref: ChannelRef): string {
    const [name, kind] = ref.split('.') as [string, 'chat' | 'session'];
    const s = this.sessions.get(name);
    if (!s) throw new StepFailure(`no session ${name}`);
    return kind === 'chat' ? s.chat : s.session;
  }

  /** A connection straight to the hub (no proxy): what the invariants read. */
  async truth(): Promise<Actor> {
    const t = new Actor('truth');
    await t.connect(`ws://${this.host.target.host}:${this.host.target.port}${this.host.wsPath}`, this.host.anyToken());
    return t;
  }

  async run(): Promise<CaseResult> {
    const started = Date.now();
    const violations: CaseResult['violations'] = [];
    try {
      for (const step of this.spec.steps) await this.#step(step);
      await checkInvariants(this, violations);
      this.#checkFaultsFired(violations);
    } catch (err) {
      violations.push({ invariant: 'step', detail: err instanceof Error ? err.message : String(err) });
    } finally {
      for (const a of this.actors.values()) a.close();
      for (const h of this.http.values()) h.close();
      for (const b of this.bridges.values()) b.close();
      for (const p of this.proxies.values()) await p.close();
    }
    const allowed = this.spec.allowedOutcomes.length > 0 ? this.spec.allowedOutcomes : [this.spec.expect ?? 'completed'];
    if (!allowed.includes(this.outcome)) violations.push({ invariant: 'outcome', detail: `ended in "${this.outcome}", allowed: ${allowed.join(', ')}` });
    const fired: Record<string, number> = {};
    for (const p of this.proxies.values()) for (const [k, v] of p.log.fired) fired[k] = (fired[k] ?? 0) + v;
    const caught = this.planted && violations.some((v) => v.invariant === this.spec.planted.breaks);
    return { id: this.spec.id, surface: this.spec.surface, faults: this.spec.faults, invariants: this.spec.invariants, outcome: this.outcome, passed: violations.length === 0, caught, violations, fired, ms: Date.now() - started };
  }

  async #step(step: Step): Promise<void> {
    switch (step.do) {
      case 'connect': {
        const proxy = await this.proxyOf(step.actor);
        const token = this.tokenFor(step.token ?? this.spec.tokens?.[0]);
        this.#tokens.set(step.actor, token);
        return this.actor(step.actor).connect(proxy.url('ws', this.host.wsPath), token);
      }
      case 'createSession':
        return this.#createSession(step.actor, step.as, step.retryOnLoss ?? false);
      case 'subscribe':
        return this.actor(step.actor).subscribe(this.channel(step.channel));
      case 'fault': {
        const proxy = await this.proxyOf(step.actor);
        const actor = this.actor(step.actor);
        const name = `${step.actor}:${typeof step.rule.verdict === 'string' ? step.rule.verdict : 'hold'}:${describeMatch(step.rule.match)}`;
        this.#ruleNames.add(name);
        proxy.addFrameRule({
          name,
          direction: step.rule.direction,
          verdict: step.rule.verdict,
          times: step.rule.times ?? 1,
          match: (f) => frameMatches(f, step.rule.match, actor),
        });
        return;
      }
      case 'httpFault': {
        const proxy = await this.proxyOf(step.actor);
        const route = new RegExp(step.rule.route);
        const name = `${step.actor}:http:${step.rule.route}`;
        this.#ruleNames.add(name);
        proxy.addHttpRule({ name, match: (h) => route.test(`${h.method} ${h.path}`), verdict: step.rule.verdict, times: step.rule.times ?? 1 });
        return;
      }
      case 'turn': {
        const startedAt = new Date(Date.now() + (step.clockSkewMs ?? 0)).toISOString();
        const script = step.script.map((s) => (isSayMarker(s) ? { say: this.marker(step.op) } : s));
        this.actor(step.actor).dispatch(step.op, this.channel(`${step.chat}.chat`), {
          type: 'chat/turnStarted',
          turnId: `turn-${this.marker(step.op)}`,
          startedAt,
          message: { text: JSON.stringify({ script }), origin: { kind: 'user' } },
        });
        return;
      }
      case 'answer':
        this.actor(step.actor).dispatch(step.op, this.channel(`${step.chat}.chat`), {
          type: 'chat/inputCompleted',
          requestId: step.requestId,
          response: 'accept',
          answers: { [step.questionId]: { state: 'submitted', value: { kind: 'text', value: this.marker(step.op) } } },
        });
        return;
      case 'draft':
        this.actor(step.actor).dispatch(step.op, this.channel(`${step.chat}.chat`), draftAction(step.requestId, step.questionId, this.marker(step.op).padEnd(step.chars, '.')));
        return;
      case 'awaitAnswer': {
        // No answer by the deadline is not a step failure: the op stays pending and
        // `outcome-known` reports it (the planted "does not re-send" client ends here).
        const actor = this.actor(step.actor);
        await until(`an answer to ${step.op} (${step.actor})`, () => actor.operation(step.op)?.status !== 'pending', this.softWaitMs).catch(() => undefined);
        const op = actor.operation(step.op);
        if (step.note && op && op.status !== 'pending') this.outcome = op.status === 'accepted' ? 'accepted' : op.reason?.startsWith('the action log is unavailable') ? 'refused-clearly' : 'refused';
        return;
      }
      case 'awaitHeld':
        await until(`${step.count} frames held at ${step.barrier}`, () => [...this.proxies.values()].reduce((n, p) => n + p.held(step.barrier), 0) >= step.count);
        return;
      case 'release':
        for (const p of this.proxies.values()) p.release(step.barrier);
        return;
      case 'cut': {
        // The fault first (a frame still in the client's socket would be lost by the cut instead).
        const proxy = await this.proxyOf(step.actor);
        await until(`${step.actor}'s faults to fire`, () => proxy.pendingRules === 0);
        proxy.abortAll();
        await until(`${step.actor}'s connection to drop`, () => !this.actor(step.actor).connected);
        return;
      }
      case 'reconnect':
        return this.#reconnect(step.actor, step.token, step.expectRefused ?? false);
      case 'awaitClosed': {
        const actor = this.actor(step.actor);
        await until(`${step.actor} closed${step.code ? ` with ${step.code}` : ''}`, () => !actor.connected && (step.code === undefined || actor.closeCodes.includes(step.code)));
        if (step.noteAnswerOf !== undefined) this.outcome = actor.operation(step.noteAnswerOf)?.status === 'pending' ? 'answered-after-reconnect' : 'answered-before-close';
        return;
      }
      case 'resume':
        (await this.proxyOf(step.actor)).resume();
        return;
      case 'awaitIdle':
        return this.#awaitIdle(this.channel(`${step.chat}.chat`));
      case 'awaitInputRequest':
        return this.#awaitInputRequest(this.channel(`${step.chat}.chat`), step.requestId);
      case 'restartHub':
        await this.host.restart({ durable: step.durable && !(this.planted && this.spec.planted.loseHubState) });
        for (const p of this.proxies.values()) p.retarget(this.host.target);
        return;
      case 'moveSession':
        if (!this.host.moveToNextNode) throw new StepFailure('this host has one node');
        await this.host.moveToNextNode();
        for (const p of this.proxies.values()) p.retarget(this.host.target);
        return;
      case 'cutStore':
        if (!this.host.cutStore) throw new StepFailure('this host has no store link to cut');
        if (this.host.cutStore() === 0) throw new StepFailure('the serving node had no connection to PostgreSQL to cut');
        return;
      case 'replaceToken':
        this.tokenFor(step.from);
        return this.host.replaceToken(step.from, step.to);
      case 'floodUntilSlowClose':
        return this.#floodUntilSlowClose(step);
      case 'httpReply':
      case 'sseOpen':
      case 'sseAwait':
      case 'sseResume':
        return this.#httpActor(step.actor).step(step, this);
      case 'bridgeOpen':
      case 'bridgePrompt':
      case 'bridgeAwait':
        return this.#bridge(step.actor).step(step, this);
    }
  }

  #httpActor(name: string): HttpActor {
    let h = this.http.get(name);
    if (!h) {
      h = new HttpActor(name, this.planted ? (this.spec.planted.flaws?.[name] ?? {}) : {});
      this.http.set(name, h);
    }
    return h;
  }

  #bridge(name: string): BridgeActor {
    let b = this.bridges.get(name);
    if (!b) {
      b = new BridgeActor(name, this.planted && (this.spec.planted.flaws?.[name]?.bridgeNoReconnect ?? false));
      this.bridges.set(name, b);
    }
    return b;
  }

  async #createSession(actorName: string, as: string, retryOnLoss: boolean): Promise<void> {
    const actor = this.actor(actorName);
    const session = `ahp-session:/${randomUUID()}`;
    const title = this.marker(as);
    try {
      const r = await actor.request<{ defaultChat: string }>('createSession', { channel: session, title });
      this.sessions.set(as, { session, chat: r.defaultChat });
      this.requestOutcomes.set(as, 'created');
      return;
    } catch (err) {
      if (!retryOnLoss || err instanceof RpcFailure) throw err;
    }
    // The answer was lost: the client cannot tell whether the session exists. Ask again.
    await this.#reconnect(actorName, undefined, false);
    try {
      const r = await actor.request<{ defaultChat: string }>('createSession', { channel: session, title });
      this.sessions.set(as, { session, chat: r.defaultChat });
      this.requestOutcomes.set(as, 'created');
      this.outcome = 'created-on-retry';
    } catch (err) {
      if (!(err instanceof RpcFailure) || err.code !== -32003) throw err;
      if (actor.flaws.recreateOnExists) {
        // Planted: the "exists" answer is taken as a failure, and another session is made.
        const again = `ahp-session:/${randomUUID()}`;
        const r = await actor.request<{ defaultChat: string }>('createSession', { channel: again, title });
        this.sessions.set(as, { session: again, chat: r.defaultChat });
        this.requestOutcomes.set(as, 'created-twice');
        this.outcome = 'exists-then-found';
        return;
      }
      // -32003: the first attempt was applied. Look the session up: its default chat is in its state.
      await actor.subscribe(session);
      const state = actor.replicas.get(session)!.state as { chats?: Array<{ resource?: string }>; defaultChat?: string };
      const chat = defaultChatOf(state);
      if (!chat) throw new StepFailure(`session ${session} exists but names no default chat`);
      this.sessions.set(as, { session, chat });
      this.requestOutcomes.set(as, 'found-existing');
      this.outcome = 'exists-then-found';
    }
  }

  async #reconnect(actorName: string, tokenHandle: string | undefined, expectRefused: boolean): Promise<void> {
    const actor = this.actor(actorName);
    const token = tokenHandle === undefined ? undefined : this.tokenFor(tokenHandle);
    if (tokenHandle !== undefined) this.#tokens.set(actorName, token);
    try {
      const r = await actor.reconnect(token);
      if (expectRefused) throw new StepFailure(`${actorName}'s reconnect was accepted with a revoked token`);
      if (r.missing.length > 0) this.outcome = 'missing-reported';
      else if (r.type === 'snapshot' && this.outcome === 'completed') this.outcome = 'snapshot-after-gap';
    } catch (err) {
      if (expectRefused && err instanceof RpcFailure && err.code === 401) return;
      throw err;
    }
  }

  /** Soft: a turn still running at the deadline is left to the invariants (its answer never came). */
  async #awaitIdle(chat: string): Promise<void> {
    const truth = await this.truth();
    try {
      await until(
        `${chat} to be idle`,
        async () => {
          await truth.subscribe(chat);
          const state = truth.replicas.get(chat)!.state as { activeTurn?: unknown };
          return state.activeTurn === undefined;
        },
        this.softWaitMs,
      ).catch(() => undefined);
    } finally {
      truth.close();
    }
  }

  async #awaitInputRequest(chat: string, requestId: string): Promise<void> {
    const truth = await this.truth();
    try {
      await until(`input request ${requestId}`, async () => {
        await truth.subscribe(chat);
        return JSON.stringify(truth.replicas.get(chat)!.state).includes(`"id":"${requestId}"`);
      });
    } finally {
      truth.close();
    }
  }

  async #floodUntilSlowClose(step: Extract<Step, { do: 'floodUntilSlowClose' }>): Promise<void> {
    const actor = this.actor(step.actor);
    const chat = this.channel(`${step.chat}.chat`);
    const before = await this.#slowConsumerCloses();
    let i = 0;
    // Drafts of 32 KiB, 16 at a time, until the hub has closed the paused reader (its socket to the
    // proxy ends) — the producer's own echoes must keep coming all along.
    await until(
      'the hub to close the paused consumer',
      async () => {
        const batch: Operation[] = [];
        for (let k = 0; k < 16; k++) batch.push(actor.dispatch(`flood-${i++}`, chat, draftAction(step.requestId, step.questionId, `${i}`.padEnd(32 * 1024, 'x'))));
        await until('the producer to hear its echoes', () => batch.every((o) => o.status !== 'pending'));
        return (await this.#slowConsumerCloses()) > before;
      },
      30_000,
    );
  }

  /** A case whose fault never happened proves nothing: every rule it set must have acted at least once. */
  #checkFaultsFired(violations: CaseResult['violations']): void {
    const fired = new Map<string, number>();
    for (const p of this.proxies.values()) for (const [k, v] of p.log.fired) fired.set(k, (fired.get(k) ?? 0) + v);
    for (const name of this.#ruleNames) if (!fired.has(name)) violations.push({ invariant: 'step', detail: `the fault ${name} never happened` });
  }

  /** The hub's count of connections it closed as slow consumers (`/metrics`; dev mode or an admin token). */
  async #slowConsumerCloses(): Promise<number> {
    const token = this.host.anyToken();
    const res = await fetch(`http://${this.host.target.host}:${this.host.target.port}/metrics`, token ? { headers: { authorization: `Bearer ${token}` } } : {});
    if (!res.ok) throw new StepFailure(`GET /metrics answered ${res.status}: the paused-consumer case reads the hub's slow-consumer count there`);
    const line = (await res.text()).split('\n').find((l) => l.startsWith('ahp_hub_slow_consumer_closes_total '));
    if (line === undefined) throw new StepFailure('no ahp_hub_slow_consumer_closes_total in /metrics');
    return Number(line.split(' ')[1]);
  }
}

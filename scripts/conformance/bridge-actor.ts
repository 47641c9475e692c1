/**
 * An ACP editor on the hub's editor bridge (`npm run acp`, `cli/acp-bridge`): the real bridge runs
 * in this process with its hub connection through the actor's fault proxy, and the editor is the
 * ACP SDK's client side on an in-memory byte pipe (as over stdio). The editor's replica is the
 * agent text its `session/update`s carry; a prompt's outcome is its `session/prompt` answer.
 */
import * as acp from '@agentclientprotocol/sdk';
import { startAcpBridge, type Bridge } from '../../cli/acp-bridge/bridge.js';
import type { CaseContext, CaseResult } from './case-types.js';
import type { Invariant, Step } from './case-format.js';

interface Prompt {
  readonly op: string;
  readonly marker: string;
  answer?: { stopReason: string } | { error: string };
}

function pipePair(): { agent: acp.Stream; client: acp.Stream } {
  const toAgent = new TransformStream<Uint8Array, Uint8Array>();
  const toClient = new TransformStream<Uint8Array, Uint8Array>();
  return { agent: acp.ndJsonStream(toClient.writable, toAgent.readable), client: acp.ndJsonStream(toAgent.writable, toClient.readable) };
}

export class BridgeActor {
  readonly updates: acp.SessionUpdate[] = [];
  readonly prompts: Prompt[] = [];
  #bridge: Bridge | undefined;
  #connection: acp.ClientConnection | undefined;
  #sessionId = '';

  constructor(
    readonly name: string,
    /** Planted: the bridge does not re-open its hub connection. */
    readonly noReconnect: boolean,
  ) {}

  async step(step: Step, run: CaseContext): Promise<void> {
    if (step.do === 'bridgeOpen') return this.#open(run, run.channel(`${step.session}.session`));
    if (step.do === 'bridgePrompt') {
      const prompt: Prompt = { op: step.op, marker: run.marker(step.op) };
      this.prompts.push(prompt);
      const script = step.script.map((s) => ((s as { say?: string }).say === '$marker' ? { say: prompt.marker } : s));
      this.#connection!.agent.request(acp.methods.agent.session.prompt, { sessionId: this.#sessionId, prompt: [{ type: 'text', text: JSON.stringify({ script }) }] }).then(
        (r) => (prompt.answer = { stopReason: r.stopReason }),
        (err: unknown) => (prompt.answer = { error: err instanceof Error ? err.message : String(err) }),
      );
      return;
    }
    if (step.do === 'bridgeAwait') {
      const prompt = this.prompts.find((p) => p.op === step.op);
      const deadline = Date.now() + run.softWaitMs * 2;
      // Soft, as every wait for the hub: an answer that never comes is `outcome-known`'s to report.
      while (prompt && prompt.answer === undefined && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    }
  }

  async #open(run: CaseContext, session: string): Promise<void> {
    const proxy = await run.proxyOf(this.name);
    const pipes = pipePair();
    this.#bridge = await startAcpBridge({ url: proxy.url('ws', run.host.wsPath), session, token: run.tokenOf(this.name), stream: pipes.agent, ...(this.noReconnect && { reconnect: false as const }) });
    const app = acp.client({ name: 'conformance-editor' }).onNotification(acp.methods.client.session.update, ({ params }) => {
      this.updates.push(params.update);
    });
    this.#connection = app.connect(pipes.client);
    await this.#connection.agent.request(acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false } });
    this.#sessionId = (await this.#connection.agent.request(acp.methods.agent.session.new, { cwd: '/tmp', mcpServers: [] })).sessionId;
  }

  /** The agent text the editor was shown. */
  get text(): string {
    return this.updates
      .filter((u) => u.sessionUpdate === 'agent_message_chunk')
      .map((u) => (u as { content: { text?: string } }).content.text ?? '')
      .join('');
  }

  checkInvariants(invariants: readonly Invariant[], violations: CaseResult['violations'], states: Map<string, unknown>, run: CaseContext): void {
    const turns = [...run.sessions.values()].flatMap((s) => {
      const chat = states.get(s.chat) as { turns?: Array<{ state: string; message: { text: string }; responseParts: Array<{ kind: string; content?: string }> }> } | undefined;
      return chat?.turns ?? [];
    });
    for (const p of this.prompts) {
      const mine = turns.filter((t) => t.message.text.includes(p.marker));
      if (invariants.includes('outcome-known') && (p.answer === undefined || 'error' in p.answer))
        violations.push({ invariant: 'outcome-known', detail: `the editor's prompt ${p.op} ${p.answer ? `failed (${(p.answer as { error: string }).error})` : 'was never answered'}, while the hub's turn is ${mine[0]?.state ?? 'absent'}` });
      if (invariants.includes('acked-kept') && p.answer && 'stopReason' in p.answer && mine.length === 0)
        violations.push({ invariant: 'acked-kept', detail: `prompt ${p.op} answered ${p.answer.stopReason} but no turn of it is in the hub` });
      if (invariants.includes('applied-once') && mine.length > 1) violations.push({ invariant: 'applied-once', detail: `prompt ${p.op} is ${mine.length} turns in the hub` });
    }
    if (invariants.includes('replicas-converge')) {
      const hub = turns.flatMap((t) => t.responseParts.filter((p) => p.kind === 'markdown').map((p) => p.content ?? '')).join('');
      if (this.text !== hub) violations.push({ invariant: 'replicas-converge', detail: `the editor was shown ${JSON.stringify(this.text).slice(0, 160)}, the hub's turns say ${JSON.stringify(hub).slice(0, 160)}` });
    }
  }

  close(): void {
    this.#connection?.close();
    this.#bridge?.close();
  }
}

/**
 * The client SDK in one file: create a session, start a turn, follow its status, add a steering
 * input to the running turn, and print the agent's answer and the input's receipt.
 *
 *   npm run build && node dist/examples/sdk-quickstart.js [ws://127.0.0.1:8787/ahp]
 *
 * With `--auth`, pass your token in AHP_TOKEN. The turn runs a demo-agent script (see the
 * README's "Agents and the demo agent"), so it finishes on its own in about two seconds.
 */
import WebSocket from 'ws';
import { AhpAuthError, AhpClient } from '../shared/client/ahp-client.js';
import { withInputs } from '../shared/client/session-inputs.js';
import { SessionStatus, type ChatState } from '../shared/protocol/state.js';

const url = process.argv[2] ?? 'ws://127.0.0.1:8787/ahp';

const statusNames = new Map<number, string>(Object.entries(SessionStatus).map(([name, value]) => [value, name]));
const activityName = (status: number): string => statusNames.get(status % 32) ?? `status ${status}`;

const client = new AhpClient({ url, token: process.env['AHP_TOKEN'] || undefined, createSocket: (u) => new WebSocket(u) });
await client.connect().catch((err: unknown) => {
  // A missing or wrong token is an AhpAuthError: one line that says what to do, no stack trace.
  console.error(err instanceof AhpAuthError ? `${err.message}: set AHP_TOKEN to a token from the hub's token file` : `cannot connect to ${url}: ${(err as Error).message}`);
  process.exit(1);
});

// 1. A session; the hub creates its default chat.
const { session, defaultChat } = await client.createSession({ title: 'SDK quickstart' });
console.log(`session ${session}`);
const chat = await client.subscribe(defaultChat as `ahp-chat:/${string}`);

// 2. Follow the chat: every confirmed or optimistic change calls this.
let lastStatus = '';
chat.onChange(() => {
  const status = activityName(chat.state.status);
  if (status !== lastStatus) console.log(`status: ${(lastStatus = status)}`);
});

// 3. Start a turn. The demo agent runs a script given as JSON; any other text starts its tour.
const turnId = `turn-${crypto.randomUUID()}`;
const script = { script: [{ say: 'Reading the contract.' }, { sleep: 1500 }, { say: 'Done: two clauses are still open.' }] };
const started = await chat.dispatch({
  type: 'chat/turnStarted',
  turnId,
  startedAt: new Date().toISOString(),
  message: { text: JSON.stringify(script), origin: { kind: 'user' } },
});
if (!started.accepted) throw new Error(`the turn was refused: ${started.reason}`);

// 4. Add to the running turn. Keep {inputId, target, content} until you know the outcome.
const inputs = withInputs(client, session);
const target = await inputs.getInputTarget(); // null when the session is idle
if (!target) throw new Error('the turn ended before it could be steered');
const request = { inputId: crypto.randomUUID(), target, content: { text: 'also check the renewal clause' } };
const submitted = await inputs.submitInput(request);
console.log(`steering input: ${submitted.outcome}${submitted.outcome === 'accepted' ? ` (ordinal ${submitted.receipt.ordinal})` : ` (${submitted.code})`}`);

// 5. Wait for the turn to end, then print what the agent said and what became of the input.
const turn = await new Promise<ChatState['turns'][number]>((resolve) => {
  const check = (): boolean => {
    const ended = chat.confirmed.turns.find((t) => t.id === turnId);
    if (ended) resolve(ended);
    return ended !== undefined;
  };
  if (!check()) {
    const off = chat.onChange(() => {
      if (check()) off();
    });
  }
});
for (const part of turn.responseParts) {
  if (part.kind === 'markdown') console.log(`agent: ${(part as { content: string }).content}`);
}
const receipt = await inputs.getInputStatus(request.inputId, request.target);
console.log(`receipt: ${receipt?.state ?? 'not found'}`);
client.close();

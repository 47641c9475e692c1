/** Helpers to drive the demo agent from tests. */
import { randomUUID } from 'node:crypto';
import type { RpcClient } from './rpc-client.js';

export function userMessage(text: string): { text: string; origin: { kind: 'user' } } {
  return { text, origin: { kind: 'user' } };
}

/** Starts a turn with the user message `text`; throws when the hub refuses it. Returns the turn id. */
export async function startTurn(client: RpcClient, chat: string, text: string, turnId = `turn-${randomUUID()}`): Promise<string> {
  const echo = await client.dispatchAndWait(chat, {
    type: 'chat/turnStarted',
    turnId,
    startedAt: new Date().toISOString(),
    message: userMessage(text),
  });
  if (echo.rejectionReason) throw new Error(`turn start rejected: ${echo.rejectionReason}`);
  return turnId;
}

/** Starts a turn whose message is a demo-agent script; returns the turn id. */
export function startScriptTurn(client: RpcClient, chat: string, script: unknown[]): Promise<string> {
  return startTurn(client, chat, JSON.stringify({ script }));
}

export const TWO_QUESTION_REQUEST = {
  id: 'req-1',
  message: 'Clarify requirements',
  questions: [
    {
      id: 'runtime',
      kind: 'single-select',
      message: 'Which runtime?',
      required: true,
      options: [
        { id: 'node', label: 'Node.js' },
        { id: 'deno', label: 'Deno' },
      ],
    },
    { id: 'notes', kind: 'text', message: 'Anything else?', required: true, max: 200 },
  ],
};

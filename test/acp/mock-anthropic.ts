/**
 * A loopback Anthropic Messages API for Claude Code (`ANTHROPIC_BASE_URL`), following the shared
 * script (`model-script.ts`): `POST /v1/messages` streamed as server-sent events (`message_start`,
 * content blocks with `text_delta` / `input_json_delta`, `message_delta` with the stop reason,
 * `message_stop`). The tool it asks for is Claude Code's `Bash`. Non-streamed side requests get a
 * short text message; `count_tokens` a fixed count.
 */
import type { ServerResponse } from 'node:http';
import { decideMove, MOCK_USAGE, type ModelScriptOptions, notFound, openEventStream, type ScriptedModel, startLoopbackModel, streamWords } from './model-script.js';

type ContentBlock = { type?: string; text?: string };
type Message = { role?: string; content?: string | ContentBlock[] };

const textOf = (content: Message['content']): string => (typeof content === 'string' ? content : (content ?? []).map((b) => (b.type === 'text' ? (b.text ?? '') : '')).join('\n'));

export async function startMockAnthropic(options: ModelScriptOptions = {}): Promise<ScriptedModel> {
  let messageCount = 0;
  const event = (res: ServerResponse, type: string, data: Record<string, unknown>): void => {
    if (!res.writableEnded) res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  };

  return startLoopbackModel('', options, (model, held) => async (req, body, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (req.method === 'POST' && path === '/v1/messages/count_tokens') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ input_tokens: MOCK_USAGE.input }));
      return;
    }
    if (req.method !== 'POST' || path !== '/v1/messages') return notFound(res);
    const parsed = JSON.parse(body) as Record<string, unknown>;
    model.requests.push(parsed);
    // Claude Code may end the list with a `system` message (its environment notes): the
    // conversation's last turn is the last user or assistant message.
    const conversation = ((parsed['messages'] as Message[] | undefined) ?? []).filter((m) => m.role !== 'system');
    const last = conversation[conversation.length - 1];
    const hasToolResult = Array.isArray(last?.content) && last.content.some((b) => b.type === 'tool_result');
    const move = decideMove({ toolsOffered: Array.isArray(parsed['tools']) && (parsed['tools'] as unknown[]).length > 0, lastIsUserText: last?.role === 'user' && !hasToolResult, lastText: textOf(last?.content) }, model.command);
    messageCount += 1;
    const id = `msg_mock_${messageCount}`;
    const modelName = typeof parsed['model'] === 'string' ? parsed['model'] : 'claude-mock';
    const usage = { input_tokens: MOCK_USAGE.input, output_tokens: MOCK_USAGE.output };
    if (parsed['stream'] !== true) {
      // Side requests (titles, summaries, command checks): one short text block.
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ id, type: 'message', role: 'assistant', model: modelName, content: [{ type: 'text', text: 'none' }], stop_reason: 'end_turn', stop_sequence: null, usage }));
      return;
    }
    openEventStream(res);
    event(res, 'message_start', {
      message: { id, type: 'message', role: 'assistant', model: modelName, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: MOCK_USAGE.input, output_tokens: 1 } },
    });
    const delta = (index: number) => (w: string) => event(res, 'content_block_delta', { index, delta: { type: 'text_delta', text: w } });
    event(res, 'content_block_start', { index: 0, content_block: { type: 'text', text: '' } });
    if (move.kind === 'tool') {
      delta(0)(move.preamble);
      event(res, 'content_block_stop', { index: 0 });
      event(res, 'content_block_start', { index: 1, content_block: { type: 'tool_use', id: `toolu_mock_${messageCount}`, name: 'Bash', input: {} } });
      const args = JSON.stringify({ command: move.command, description: 'Create the marker file' });
      event(res, 'content_block_delta', { index: 1, delta: { type: 'input_json_delta', partial_json: args.slice(0, 10) } });
      event(res, 'content_block_delta', { index: 1, delta: { type: 'input_json_delta', partial_json: args.slice(10) } });
      event(res, 'content_block_stop', { index: 1 });
    } else {
      await streamWords(model, held, model.answer, delta(0));
      event(res, 'content_block_stop', { index: 0 });
    }
    event(res, 'message_delta', { delta: { stop_reason: move.kind === 'tool' ? 'tool_use' : 'end_turn', stop_sequence: null }, usage: { output_tokens: MOCK_USAGE.output } });
    event(res, 'message_stop', {});
    if (!res.writableEnded) res.end();
  });
}

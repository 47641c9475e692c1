/**
 * A loopback OpenAI Responses API (`POST …/responses`, `wire_api = "responses"`) for Codex
 * (`@zed-industries/codex-acp`), following the shared script (`model-script.ts`): a request whose
 * last input item is the user's own message asks for one shell command as a `function_call` item
 * (for whichever shell tool the request offers: `shell_command`, `exec_command` or `shell`); once
 * a `function_call_output` is the last item it answers in text. Every answer is a stream of
 * server-sent response events: `response.created`, `response.output_item.added` /
 * `response.output_text.delta` / `response.output_item.done`, then `response.completed` with usage.
 */
import type { ServerResponse } from 'node:http';
import { decideMove, MOCK_USAGE, type ModelScriptOptions, notFound, openEventStream, type ScriptedModel, startLoopbackModel, streamWords } from './model-script.js';

type InputItem = { type?: string; role?: string; content?: unknown };
type Tool = { type?: string; name?: string };

/** The arguments of the shell tool the request offers, for `command`. */
function shellCall(tools: readonly Tool[], command: string): { name: string; args: Record<string, unknown> } {
  const names = new Set(tools.map((t) => t.name));
  if (names.has('shell_command')) return { name: 'shell_command', args: { command } };
  if (names.has('exec_command')) return { name: 'exec_command', args: { cmd: command } };
  return { name: 'shell', args: { command: ['bash', '-lc', command] } };
}

export async function startMockResponses(options: ModelScriptOptions = {}): Promise<ScriptedModel> {
  let responses = 0;
  const event = (res: ServerResponse, type: string, data: Record<string, unknown>): void => {
    if (!res.writableEnded) res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  };
  const usage = {
    input_tokens: MOCK_USAGE.input,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: MOCK_USAGE.output,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: MOCK_USAGE.input + MOCK_USAGE.output,
  };

  return startLoopbackModel('/v1', options, (model, held) => async (req, body, res) => {
    if (req.method !== 'POST' || !/\/responses$/.test((req.url ?? '').split('?')[0] ?? '')) return notFound(res);
    const parsed = JSON.parse(body) as Record<string, unknown>;
    model.requests.push(parsed);
    const input = (parsed['input'] as InputItem[] | undefined) ?? [];
    const tools = (parsed['tools'] as Tool[] | undefined) ?? [];
    const last = input[input.length - 1];
    const move = decideMove({ toolsOffered: tools.length > 0, lastIsUserText: last?.type === 'message' && last.role === 'user', lastText: JSON.stringify(last?.content ?? '') }, model.command);
    responses += 1;
    const id = `resp_mock_${responses}`;
    openEventStream(res);
    event(res, 'response.created', { response: { id, object: 'response', status: 'in_progress', output: [] } });
    const message = async (text: string, index: number, stream: boolean): Promise<void> => {
      const itemId = `msg_${responses}_${index}`;
      event(res, 'response.output_item.added', { output_index: index, item: { type: 'message', id: itemId, role: 'assistant', status: 'in_progress', content: [] } });
      if (stream) await streamWords(model, held, text, (w) => event(res, 'response.output_text.delta', { item_id: itemId, output_index: index, content_index: 0, delta: w }));
      else event(res, 'response.output_text.delta', { item_id: itemId, output_index: index, content_index: 0, delta: text });
      event(res, 'response.output_item.done', { output_index: index, item: { type: 'message', id: itemId, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text, annotations: [] }] } });
    };
    if (move.kind === 'tool') {
      await message(move.preamble, 0, false);
      const call = shellCall(tools, move.command);
      const item = { type: 'function_call', id: `fc_${responses}`, call_id: `call_${responses}`, name: call.name, arguments: JSON.stringify(call.args), status: 'completed' };
      event(res, 'response.output_item.added', { output_index: 1, item: { ...item, arguments: '', status: 'in_progress' } });
      event(res, 'response.output_item.done', { output_index: 1, item });
    } else {
      await message(model.answer, 0, true);
    }
    event(res, 'response.completed', { response: { id, object: 'response', status: 'completed', output: [], usage } });
    if (!res.writableEnded) res.end();
  });
}

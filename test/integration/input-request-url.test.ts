/**
 * Input requests carry a URL the answering surface opens (issue 18, item 8): only http(s) URLs
 * are accepted; `javascript:` and `file:` ones are refused at validation, so they are neither
 * stored nor forwarded to editors.
 */
import { afterEach, expect, it } from 'vitest';
import { findOpenInputRequest } from '../../shared/state/selectors.js';
import { RpcClient } from '../helpers/rpc-client.js';
import { startTestServer, type TestServer } from '../helpers/start-server.js';
import { userMessage } from '../helpers/turns.js';

let server: TestServer | undefined;
let agent: RpcClient | undefined;

afterEach(async () => {
  await agent?.close();
  await server?.close();
});

it("an agent's input request with a javascript: or file: URL is refused and not stored; an https one is kept", async () => {
  server = await startTestServer();
  // Dev mode's principal is the admin, which may act as a remote agent.
  agent = await RpcClient.open(server.wsUrl);
  const { defaultChat: chat } = await agent.request<{ defaultChat: string }>('createSession', { channel: 'ahp-session:/urls', provider: 'remote' });
  await agent.subscribe(chat);
  expect((await agent.dispatchAndWait(chat, { type: 'chat/turnStarted', turnId: 't1', startedAt: new Date().toISOString(), message: userMessage('hi') })).rejectionReason).toBeUndefined();
  const ask = (id: string, url: string) => agent!.dispatchAndWait(chat, { type: 'chat/inputRequested', request: { id, message: 'open this', url } });
  for (const [id, url] of [
    ['js', 'javascript:alert(document.cookie)'],
    ['file', 'file:///etc/passwd'],
    ['data', 'data:text/html,<script>1</script>'],
    ['bare', 'https://'],
  ] as const) {
    expect((await ask(id, url)).rejectionReason).toMatch(/url must be an http:\/\/ or https:\/\/ URL/);
  }
  expect((await ask('ok', 'https://example.com/review?x=1')).rejectionReason).toBeUndefined();
  const state = server.hub.chatEntry(chat)!.state;
  expect(findOpenInputRequest(state, 'ok')).toBeDefined();
  for (const id of ['js', 'file', 'data', 'bare']) expect(findOpenInputRequest(state, id)).toBeUndefined();
});

/**
 * A hub restart on the same data directory: the agent list is the one configured now, and a
 * session's next turn resumes the agent's own conversation with `session/load` (when the agent
 * supports it) instead of starting a new one.
 */
import { afterEach, expect, it } from 'vitest';
import { RpcClient } from '../helpers/rpc-client.js';
import { tempDir, type TestServer } from '../helpers/start-server.js';
import { acpConfig, capturingLogger, createSessionWith, script, startAcpHub, startTurn, text, waitForEnd } from './support.js';

let server: TestServer | undefined;
let client: RpcClient | undefined;
const data = tempDir('acp-restart-');

afterEach(async () => {
  await client?.close();
  await server?.close();
  data.remove();
});

it('after a restart the root state lists the agents configured now, and the next turn loads the agent\'s earlier session', async () => {
  const config = acpConfig({ cwd: data.dir, env: { SCRIPTED_AGENT_LOAD: '1' } });
  const firstLog = capturingLogger();
  let started = await startAcpHub([{ provider: 'scripted', config }], firstLog, { dataDir: data.dir });
  server = started.server;
  client = await RpcClient.open(server.wsUrl);
  const { session, chat } = await createSessionWith(client, 'scripted');
  await client.subscribe(chat);
  const first = await startTurn(client, chat, script(text('first turn')));
  expect((await waitForEnd(server, chat, first)).state).toBe('complete');
  const acpSessionId = started.providers.get('scripted')!.processOf(session)!.acpSessionId!;
  await client.close();
  await server.close();

  const secondLog = capturingLogger();
  started = await startAcpHub([{ provider: 'scripted', config }, { provider: 'another', config }], secondLog, { dataDir: data.dir });
  server = started.server;
  client = await RpcClient.open(server.wsUrl);
  const root = await client.subscribe<{ agents: Array<{ provider: string }> }>('ahp-root://');
  expect(root.state.agents.map((a) => a.provider)).toEqual(['demo', 'remote', 'scripted', 'another']);
  await client.subscribe(chat);
  const second = await startTurn(client, chat, script(text('second turn')));
  expect((await waitForEnd(server, chat, second)).state).toBe('complete');
  expect(started.providers.get('scripted')!.processOf(session)!.acpSessionId).toBe(acpSessionId);
  expect(secondLog.lines.some((l) => l.msg === 'agent session loaded' && l.fields['acpSessionId'] === acpSessionId)).toBe(true);
  expect(secondLog.lines.some((l) => l.msg === 'agent stderr' && l.fields['line'] === `scripted agent: load session ${acpSessionId}`)).toBe(true);
});

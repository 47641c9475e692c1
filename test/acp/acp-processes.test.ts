/**
 * The whole chain as real processes, as a user runs it: `npm start -- --agents FILE` hosting the
 * scripted ACP agent, and `npm run acp` (the editor bridge) driven by the ACP SDK's client side
 * over its stdio. Editor → bridge → hub → hosted ACP agent, and back.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import * as acp from '@agentclientprotocol/sdk';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { startHubProcess, type HubProcess } from '../helpers/hub-process.js';
import { RpcClient } from '../helpers/rpc-client.js';
import { tempDir } from '../helpers/start-server.js';
import { bundleScriptedAgent, createSessionWith } from './support.js';

const dir = tempDir('acp-processes-');
let hub: HubProcess | undefined;
let bridge: ChildProcess | undefined;
let connection: acp.ClientConnection | undefined;
let client: RpcClient | undefined;
let agent: ReturnType<typeof bundleScriptedAgent>;

beforeAll(() => {
  agent = bundleScriptedAgent();
});
afterAll(() => agent.remove());

afterEach(async () => {
  connection?.close();
  bridge?.kill();
  await client?.close();
  hub?.child.kill('SIGTERM');
  await hub?.exited();
  dir.remove();
});

it('npm start --agents hosts the configured agent, and an ACP editor prompts it through npm run acp', async () => {
  const agentsFile = join(dir.dir, 'agents.json');
  // Confined as by default (a uid of the tenant's own): the agent sits where that uid may read it.
  chmodSync(dir.dir, 0o711);
  writeFileSync(agentsFile, JSON.stringify({ agents: { scripted: { kind: 'acp', command: process.execPath, args: [agent.path], cwd: dir.dir, displayName: 'Scripted agent' } } }));
  hub = await startHubProcess(['--data', join(dir.dir, 'data'), '--agents', agentsFile]);
  client = await RpcClient.open(hub.wsUrl);
  const root = await client.subscribe<{ agents: Array<{ provider: string; displayName: string }> }>('ahp-root://');
  expect(root.state.agents).toContainEqual(expect.objectContaining({ provider: 'scripted', displayName: 'Scripted agent' }));
  const { session } = await createSessionWith(client, 'scripted');

  if (!existsSync('dist/cli/acp-bridge/main.js')) execFileSync('npx', ['tsc', '-p', 'tsconfig.build.json'], { stdio: 'inherit' });
  bridge = spawn(process.execPath, ['dist/cli/acp-bridge/main.js', '--url', hub.wsUrl, '--session', session.slice('ahp-session:/'.length)], { stdio: ['pipe', 'pipe', 'pipe'] });
  const stream = acp.ndJsonStream(Writable.toWeb(bridge.stdin!) as WritableStream<Uint8Array>, Readable.toWeb(bridge.stdout!) as ReadableStream<Uint8Array>);
  const updates: acp.SessionUpdate[] = [];
  connection = acp
    .client({ name: 'process-editor' })
    .onNotification(acp.methods.client.session.update, ({ params }) => void updates.push(params.update))
    .connect(stream);
  await connection.agent.request(acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} });
  const { sessionId } = await connection.agent.request(acp.methods.agent.session.new, { cwd: dir.dir, mcpServers: [] });
  const response = await connection.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'hello from the editor' }] });
  expect(response.stopReason).toBe('end_turn');
  const said = updates
    .filter((u) => u.sessionUpdate === 'agent_message_chunk')
    .map((u) => (u as { content: { text?: string } }).content.text ?? '')
    .join('');
  expect(said).toBe('echo: hello from the editor');
  expect(updates[0]).toMatchObject({ sessionUpdate: 'user_message_chunk', content: { text: 'hello from the editor' } });
  // The hosted agent's stderr is in the hub's log, not in anything a client got.
  expect(hub.stderr()).toContain('scripted agent: new session in');
  expect(JSON.stringify(updates)).not.toContain('scripted agent:');
});

/**
 * qwen serve's session status names the directory the session's agent really runs in, the same
 * one `POST /session` reports: an ACP agent's own per-session directory, "/" for a session whose
 * agent has no process (the demo agent). It used to answer "/" for every session.
 */
import { afterEach, expect, it } from 'vitest';
import { DaemonClient } from '@qwen-code/sdk';
import { sessionIdOf } from '../../shared/protocol/uris.js';
import { RpcClient } from '../helpers/rpc-client.js';
import { tempDir, TOKENS, type TestServer } from '../helpers/start-server.js';
import { acpConfig, capturingLogger, createSessionWith, startAcpHub } from './support.js';

let server: TestServer | undefined;
let client: RpcClient | undefined;
const dirs: Array<{ remove(): void }> = [];

afterEach(async () => {
  await client?.close();
  client = undefined;
  await server?.stop();
  server = undefined;
  for (const d of dirs.splice(0)) d.remove();
});

it("status reports an ACP session's own working directory, and / for the demo agent's", async () => {
  const dir = tempDir('qwen-status-cwd-');
  dirs.push(dir);
  const started = await startAcpHub([{ provider: 'scripted', config: acpConfig() }], capturingLogger(), { dataDir: dir.dir, withAuth: true });
  server = started.server;
  client = await RpcClient.open(server.wsUrl, { token: TOKENS.alice });
  const acp = await createSessionWith(client, 'scripted');
  const demo = await createSessionWith(client, 'demo');
  const qwen = new DaemonClient({ baseUrl: server.url, token: TOKENS.alice });

  const workspace = started.providers.get('scripted')!.workspaceOf(acp.session);
  expect(workspace.startsWith(`${dir.dir}/agents/`)).toBe(true);
  expect((await qwen.sessionStatus(sessionIdOf(acp.session))).workspaceCwd).toBe(workspace);
  // POST /session (attaching) and the status agree.
  expect((await qwen.createOrAttachSession({ sessionId: sessionIdOf(acp.session) } as never)).workspaceCwd).toBe(workspace);
  expect((await qwen.sessionStatus(sessionIdOf(demo.session))).workspaceCwd).toBe('/');
});

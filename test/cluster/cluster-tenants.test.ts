/**
 * Tenants on a cluster: every tenant is its own partition of the PostgreSQL store, on every node.
 * Two tenants may use the same session id from different nodes, each node routes each client to
 * its tenant's state, and one tenant's serverSeq has no gaps for another tenant's actions.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { RpcClient } from '../helpers/rpc-client.js';
import { tempDir, TOKENS, writeAuthFile } from '../helpers/start-server.js';
import { userMessage } from '../helpers/turns.js';
import { clusterPerFile, subscribeWhenKnown } from './cluster.js';

const draft = (text: string): Record<string, unknown> => ({ type: 'chat/draftChanged', draft: userMessage(text) });

describe('tenants across cluster nodes', () => {
  const dir = tempDir();
  const fx = clusterPerFile(2, ['--auth', writeAuthFile(dir.dir)]);
  const clients = fx.clients;
  afterAll(() => dir.remove());

  const open = async (wsUrl: string, token: string): Promise<RpcClient> => {
    const c = await RpcClient.open(wsUrl, { token });
    clients.push(c);
    return c;
  };

  it('the same session id in two tenants on two nodes stays two sessions, each with its own gap-free serverSeq', async () => {
    const [n1, n2] = fx.cluster.nodes;
    const alice = await open(n1!.wsUrl, TOKENS.alice);
    const mallory = await open(n2!.wsUrl, TOKENS.mallory);
    const id = 'ahp-session:/shared-name';
    const acme = await alice.request<{ defaultChat: string }>('createSession', { channel: id, title: 'acme' });
    const evil = await mallory.request<{ defaultChat: string }>('createSession', { channel: id, title: 'evil' });
    await alice.subscribe(acme.defaultChat);
    const first = (await alice.dispatchAndWait(acme.defaultChat, draft('acme 1'))).serverSeq;
    await mallory.subscribe(evil.defaultChat);
    for (let i = 0; i < 20; i++) await mallory.dispatchAndWait(evil.defaultChat, draft(`evil ${i}`));
    expect((await alice.dispatchAndWait(acme.defaultChat, draft('acme 2'))).serverSeq).toBe(first + 1);

    // Each node serves each tenant its own session under the shared id.
    const bob = await open(n2!.wsUrl, TOKENS.bob);
    const acmeOnNode2 = await subscribeWhenKnown<{ draft?: { text?: string } }>(bob, acme.defaultChat);
    expect(acmeOnNode2.state.draft?.text).toBe('acme 2');
    expect((await bob.subscribe<{ title: string }>(id)).state.title).toBe('acme');
    const malloryOnNode1 = await open(n1!.wsUrl, TOKENS.mallory);
    expect((await subscribeWhenKnown<{ title: string }>(malloryOnNode1, id)).state.title).toBe('evil');
    await expect(malloryOnNode1.subscribe(acme.defaultChat)).rejects.toMatchObject({ code: -32008 });
  });
});

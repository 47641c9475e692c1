/**
 * What the restart tests share: real hub processes stopped with SIGTERM or SIGKILL and started
 * again on the same data dir, the clients that reconnect to them and the temp dirs they use, all
 * ended after each test.
 */
import { afterEach } from 'vitest';
import { startHubProcess, type HubProcess } from './hub-process.js';
import { RpcClient } from './rpc-client.js';
import { tempDir } from './start-server.js';

export class RestartRig {
  readonly #procs: HubProcess[] = [];
  readonly #clients: RpcClient[] = [];
  readonly #dirs: Array<{ remove(): void }> = [];

  private constructor() {}

  /** A rig whose processes, clients and dirs are ended in `afterEach`. */
  static perTest(): RestartRig {
    const rig = new RestartRig();
    afterEach(() => rig.#cleanup());
    return rig;
  }

  dataDir(prefix: string): string {
    const dir = tempDir(prefix);
    this.#dirs.push(dir);
    return dir.dir;
  }

  async start(args: string[], env?: Record<string, string>): Promise<HubProcess> {
    const hub = await startHubProcess(args, env ? { env } : {});
    this.#procs.push(hub);
    return hub;
  }

  /** A new connection (a tab that reloaded after the restart); `reconnect` with a cursor is covered in crash-recovery.test.ts. */
  async open(hub: HubProcess, token?: string): Promise<RpcClient> {
    const c = await RpcClient.open(hub.wsUrl, token ? { token } : {});
    this.#clients.push(c);
    return c;
  }

  /** Stops the hub (SIGTERM waits for it to drain, SIGKILL does not) and starts it again with `args`. */
  async restart(hub: HubProcess, signal: 'SIGTERM' | 'SIGKILL', args: string[], env?: Record<string, string>): Promise<HubProcess> {
    hub.child.kill(signal);
    const exit = await hub.exited();
    // On SIGTERM the hub drains and exits by itself (no signal); dying of another signal is wrong.
    if ((exit.signal ?? signal) !== signal) throw new Error(`the hub died of ${exit.signal}, not ${signal}`);
    return this.start(args, env);
  }

  async #cleanup(): Promise<void> {
    for (const c of this.#clients.splice(0)) await c.close();
    for (const p of this.#procs.splice(0)) p.child.kill('SIGKILL');
    for (const d of this.#dirs.splice(0)) d.remove();
  }
}

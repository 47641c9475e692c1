#!/usr/bin/env node
/**
 * `npm run acp -- --url ws://HOST:PORT/ahp --session ID [--token T]`: an ACP agent on stdio that
 * is a live view of one hub session (see bridge.ts). Point an ACP editor at this command.
 * stdout carries only ACP messages; diagnostics go to stderr. Exit codes: 0 when the editor
 * closes the stream, 1 on a failure, 2 on bad usage.
 */
import { Readable, Writable } from 'node:stream';
import { parseArgs } from 'node:util';
import * as acp from '@agentclientprotocol/sdk';
import { startAcpBridge } from './bridge.js';

const USAGE = 'usage: npm run --silent acp -- --url ws://HOST:PORT/ahp --session ID [--token TOKEN]   (token also from HUB_TOKEN)';

async function main(): Promise<number> {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({ args: process.argv.slice(2), strict: true, allowPositionals: false, options: { url: { type: 'string' }, session: { type: 'string' }, token: { type: 'string' }, help: { type: 'boolean' } } }));
  } catch (err) {
    process.stderr.write(`error: ${(err as Error).message}\n${USAGE}\n`);
    return 2;
  }
  if (values['help']) {
    process.stderr.write(USAGE + '\n');
    return 0;
  }
  const url = values['url'];
  const session = values['session'];
  if (typeof url !== 'string' || !/^wss?:\/\//.test(url) || typeof session !== 'string' || session === '') {
    process.stderr.write(`error: --url ws://… and --session are required\n${USAGE}\n`);
    return 2;
  }
  const token = typeof values['token'] === 'string' ? values['token'] : process.env['HUB_TOKEN'] || undefined;
  const stream = acp.ndJsonStream(Writable.toWeb(process.stdout) as WritableStream<Uint8Array>, Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>);
  const bridge = await startAcpBridge({ url, session, token, stream, log: (line) => process.stderr.write(`acp-bridge: ${line}\n`) });
  process.stderr.write(`acp-bridge: attached to ${session} at ${url}\n`);
  await bridge.closed;
  bridge.close();
  return 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`acp-bridge failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);

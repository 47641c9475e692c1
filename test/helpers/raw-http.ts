/** HTTP and WebSocket requests with exactly the headers a test writes (Host and Origin included). */
import { request } from 'node:http';
import WebSocket from 'ws';

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json(): any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

export function rawRequest(port: number, options: { method?: string; path: string; headers?: Record<string, string>; body?: string | Buffer }): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method: options.method ?? 'GET', path: options.path, headers: options.headers ?? {} }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json: () => JSON.parse(text) });
      });
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

/** Opens a WebSocket; resolves with the socket when the upgrade succeeds, or the refusal's status and body. */
export function tryUpgrade(url: string, options: { origin?: string; headers?: Record<string, string> } = {}): Promise<{ ws: WebSocket; status: 101 } | { ws: undefined; status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { ...(options.origin ? { origin: options.origin } : {}), headers: options.headers ?? {} });
    ws.once('open', () => resolve({ ws, status: 101 }));
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ ws: undefined, status: res.statusCode ?? 0, body }));
    });
    ws.once('error', (err) => reject(err));
  });
}

// scripts/check-cycles.mjs, the shape check `npm run lint` runs: cycles (type-only imports
// included), file sizes, and the paths docs/architecture.md names. Run as `npm run lint` runs it,
// as a child process, against this checkout and against planted ones.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

const script = join(import.meta.dirname, '../../scripts/check-cycles.mjs');
const dirs: string[] = [];

afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function run(args: string[]): { code: number; out: string } {
  try {
    const out = execFileSync(process.execPath, [script, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    return { code: 0, out };
  } catch (err) {
    const e = err as { status: number; stdout: string; stderr: string };
    return { code: e.status, out: e.stdout + e.stderr };
  }
}

function checkout(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'check-cycles-'));
  dirs.push(root);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

describe('check-cycles', () => {
  it('passes on this checkout: no cycles, no oversized file, every path docs/architecture.md names exists', () => {
    const { code, out } = run(['--json']);
    const figures = JSON.parse(out) as { files: number; edges: number; cycles: string[][]; problems: string[] };
    expect(figures.problems).toEqual([]);
    expect(figures.cycles).toEqual([]);
    expect(figures.files).toBeGreaterThan(200);
    expect(code).toBe(0);
  });

  it('finds a cycle made only of type imports, through .js specifiers and export-from', () => {
    const root = checkout({
      'app/a.ts': "import type { B } from './b.js';\nexport type A = { b?: B };\n",
      'app/b.ts': "export type { A } from './a.js';\nexport type B = number;\n",
      'server/x.ts': "import { y } from './sub/y.js';\nexport const x = y;\n",
      'server/sub/y.ts': 'export const y = 1;\n',
    });
    const { code, out } = run(['--root', root]);
    expect(code).toBe(1);
    expect(out).toContain('cycle: app/a.ts → app/b.ts → app/a.ts');
    expect(out).not.toContain('server/x.ts');
  });

  it('finds HTTP status numbers written outside the error table and its renderer', () => {
    const root = checkout({
      'server/route.ts': [
        'export function a(res: any) { res.writeHead(404); }',
        'export function b(res: any) { sendJson(res, 201, {}); }',
        "export function c() { throw new HttpError(409, 'taken', 'm'); }",
        "export const d = { status: 421, code: 'host_not_allowed' };",
        'export function e(res: any) { res.statusCode = 500; }',
        'export function replyStatus(x: string) { if (x) return 503; return 400; }',
        // Reading another server's status, and numbers that are not statuses, pass.
        'export function f(res: any) { return res.status === 410 || [404].length > 0 ? 200 : 1; }',
      ].join('\n'),
      'server/transport/http-reply.ts': 'export const OK = 200;\nexport function g(res: any) { res.writeHead(204); }\n',
      'scripts/fault.ts': 'export const rule = { respond: { status: 503 } };\n',
    });
    const { code, out } = run(['--root', root]);
    expect(code).toBe(1);
    const found = out
      .split('\n')
      .filter((l) => l.startsWith('status: '))
      .map((l) => l.split(' is ')[0]);
    expect(found).toEqual([
      'status: server/route.ts:1: 404',
      'status: server/route.ts:2: 201',
      'status: server/route.ts:3: 409',
      'status: server/route.ts:4: 421',
      'status: server/route.ts:5: 500',
      'status: server/route.ts:6: 503',
      'status: server/route.ts:6: 400',
    ]);
  });

  it('finds a longer cycle and names every file of the component', () => {
    const root = checkout({
      'shared/one.ts': "import { two } from './two.js';\nexport const one = () => two;\n",
      'shared/two.ts': "import { three } from './three.js';\nexport const two = () => three;\n",
      'shared/three.ts': "export const three = async () => (await import('./one.js')).one;\n",
    });
    const { code, out } = run(['--root', root]);
    expect(code).toBe(1);
    expect(out).toContain('cycle: shared/one.ts → shared/two.ts → shared/three.ts → shared/one.ts (3 files in the component)');
  });

  it('holds app/ to 400 lines and the other product folders to 500', () => {
    const lines = (n: number): string => 'export const x = 1;\n'.repeat(n);
    const root = checkout({ 'app/ok.ts': lines(400), 'app/big.ts': lines(401), 'server/ok.ts': lines(500), 'scripts/big.ts': lines(501) });
    const { code, out } = run(['--root', root]);
    expect(code).toBe(1);
    expect(out).toContain('size: app/big.ts has 401 lines (limit 400)');
    expect(out).toContain('size: scripts/big.ts has 501 lines (limit 500)');
    expect(out).not.toContain('ok.ts');
  });

  it('names a path or a code name docs/architecture.md or AGENTS.md cites that does not exist', () => {
    const root = checkout({
      'server/hub/hub.ts': 'export class Hub {\n  #decide(): void {}\n  submitAs(): void {}\n}\nexport function decide(): void {}\n',
      'docs/architecture.md': 'See `server/hub/hub.ts` and `server/hub/gone.ts`, `hub.ts`, `server/storage/*-log.ts`, `Hub.#decide`, `Hub.submitAs(principal)`, `decide`, `Hub.dispatchServer`, `rpcCodeForStatus`.\n',
      'AGENTS.md': 'Call `hub.submitAs`, never `Hub.sendRaw`; `hub.db` is a data file.\n',
    });
    const { code, out } = run(['--root', root]);
    expect(code).toBe(1);
    const problems = out.split('\n').filter((l) => l.startsWith('docs: '));
    expect(problems).toEqual([
      'docs: docs/architecture.md names server/hub/gone.ts, which does not exist',
      'docs: docs/architecture.md names `Hub.dispatchServer`, which is not in the code',
      'docs: docs/architecture.md names `rpcCodeForStatus`, which is not in the code',
      'docs: AGENTS.md names `Hub.sendRaw`, which is not in the code',
    ]);
  });
});

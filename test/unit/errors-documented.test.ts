/**
 * docs/errors.md is checked against the one table (`ERROR_TABLE`, shared/protocol/error-kinds.ts):
 * every kind has a row whose JSON-RPC code, HTTP status (and for a finer kind its body `code` and
 * coarse kind) are the table's, every row names a kind of the table, every JSON-RPC code and every
 * DataWorks name a reply can carry is on the page, and the codes the source still writes by hand
 * (`code: '…'` inside `data` or a body that is not ours) are named too. Every status and code a
 * route sends comes from a kind (the constructor takes nothing else), so a code on the wire that
 * the page does not explain fails here.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { COARSE_KINDS, dataWorksCode, ERROR_TABLE, familyOf, FINER_KINDS, httpCodeOf, isErrorKind, type ErrorKind } from '../../shared/protocol/error-kinds.js';
import { ErrorCode } from '../../shared/protocol/errors.js';

const DOC = readFileSync('docs/errors.md', 'utf8');

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

/** A code is documented when the page names it in backticks (`code`). */
const documented = (code: string): boolean => DOC.includes(`\`${code}\``);

/** The rows of the markdown table under `heading` whose first cell is a backticked name: name → cells. */
function tableRows(heading: string): Map<string, string[]> {
  const start = DOC.indexOf(heading);
  expect(start, heading).toBeGreaterThanOrEqual(0);
  const next = DOC.indexOf('\n## ', start + heading.length);
  const section = DOC.slice(start, next < 0 ? undefined : next);
  const rows = new Map<string, string[]>();
  for (const line of section.split('\n')) {
    const m = /^\| `([a-z_]+)` \|(.*)\|$/.exec(line);
    if (m)
      rows.set(
        m[1]!,
        m[2]!.split(' | ').map((c) => c.trim()),
      );
  }
  return rows;
}

const rpcText = (code: number): string => String(code).replace('-', '−');

describe('docs/errors.md is checked against the error table', () => {
  it('every coarse kind has a row with its JSON-RPC code and HTTP status', () => {
    const rows = tableRows('## Kinds → codes per surface');
    const wrong = Object.entries(COARSE_KINDS)
      .filter(([kind, row]) => {
        const cells = rows.get(kind);
        return cells === undefined || cells[1] !== rpcText(row.rpc) || cells[2] !== String(row.http);
      })
      .map(([kind]) => kind);
    expect(wrong).toEqual([]);
    expect([...rows.keys()].filter((name) => !Object.hasOwn(COARSE_KINDS, name))).toEqual([]);
  });

  it('every finer kind has a row with its status, body code, coarse kind and JSON-RPC code', () => {
    const rows = tableRows('## Finer kinds');
    const wrong = (Object.keys(FINER_KINDS) as (keyof typeof FINER_KINDS)[])
      .filter((kind) => {
        const cells = rows.get(kind);
        const row = FINER_KINDS[kind];
        return cells === undefined || cells[0] !== String(row.http) || cells[1] !== `\`${httpCodeOf(kind)}\`` || cells[2] !== `\`${familyOf(kind)}\`` || cells[3] !== rpcText(row.rpc);
      })
      .map((kind) => `${kind}: ${JSON.stringify(rows.get(kind))}`);
    expect(wrong).toEqual([]);
    // No documented kind the table does not have.
    expect([...rows.keys()].filter((name) => !Object.hasOwn(FINER_KINDS, name))).toEqual([]);
    expect(Object.keys(ERROR_TABLE).length).toBe(Object.keys(COARSE_KINDS).length + rows.size);
  });

  it('every JSON-RPC code', () => {
    const rpcCodes: number[] = [...new Set(Object.values(ErrorCode))];
    const undocumentedRpc = rpcCodes.filter((c) => !DOC.includes(rpcText(c)) && !DOC.includes(String(c)));
    expect(undocumentedRpc).toEqual([]);
  });

  it('every DataWorks name a permission reply can carry', () => {
    // The kinds the reply checks and the registry answer with, read from their source.
    const kinds = new Set<ErrorKind>(['invalid_json', 'invalid_request', 'body_too_large', 'unsupported_media_type', 'daemon_permission_unavailable']);
    for (const file of sources('server/interactions')) {
      for (const m of readFileSync(file, 'utf8').matchAll(/(?:kind|code): '([a-z_]+)'/g)) if (isErrorKind(m[1])) kinds.add(m[1]);
    }
    expect(kinds.size).toBeGreaterThan(15);
    expect([...kinds].map(dataWorksCode).filter((name) => !documented(name))).toEqual([]);
  });

  it('every code the source still writes by hand (inside data, or a body that is not ours)', () => {
    const found = new Map<string, string>();
    for (const file of [...sources('server'), ...sources('shared')]) {
      for (const m of readFileSync(file, 'utf8').matchAll(/\bcode: '([a-z][a-z0-9_]*)'/g)) if (!found.has(m[1]!)) found.set(m[1]!, file);
    }
    expect(found.size).toBeGreaterThan(5);
    expect([...found].filter(([code]) => !documented(code)).map(([code, file]) => `${code} (${file})`)).toEqual([]);
  });
});

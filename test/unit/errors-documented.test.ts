/**
 * Every error code the hub can put on the wire is named in docs/errors.md: the kinds of the one
 * table, the finer HTTP codes routes use (`new HttpError(…)`, steering's `InputError`, upgrade
 * refusals, hand-written `code:` fields), the DataWorks reply names and every JSON-RPC code. The
 * codes are read from the source, so a new route that invents a code fails here until the page
 * says what it means.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERROR_TABLE } from '../../shared/protocol/error-kinds.js';
import { ErrorCode } from '../../shared/protocol/errors.js';
import { REPLY_ERRORS } from '../../server/interactions/replies.js';

const DOC = readFileSync('docs/errors.md', 'utf8');

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

/** String codes handed to the error builders of the HTTP and upgrade surfaces. */
function codesInSource(): Map<string, string> {
  const found = new Map<string, string>();
  const patterns = [
    // new HttpError(404, 'code', …) and HttpError.of('kind', …)
    /new HttpError\(\s*[\w.]+,\s*'([a-z][a-z0-9_]*)'/g,
    /HttpError\.of\(\s*'([a-z][a-z0-9_]*)'/g,
    /qwenHttpError\(\s*[\w.()]+,\s*'([a-z][a-z0-9_]*)'/g,
    // new InputError(409, 'closed', 'turn_closed', …)
    /new InputError\(\s*[\w.()]+,\s*(?:'[a-z]+'|undefined|[\w.]+),\s*'([a-z][a-z0-9_]*)'/g,
    // refuse(socket, 503, 'draining', …) at the WebSocket upgrade
    /refuse\(\s*\w+,\s*\d+,\s*'([a-z][a-z0-9_]*)'/g,
    // bodies that carry a code by hand ({ code: 'prompt_queue_full', … })
    /\bcode: '([a-z][a-z0-9_]*)'/g,
  ];
  for (const file of [...sources('server'), ...sources('shared')]) {
    const text = readFileSync(file, 'utf8');
    for (const re of patterns) for (const m of text.matchAll(re)) if (!found.has(m[1]!)) found.set(m[1]!, file);
  }
  return found;
}

/** A code is documented when the page names it in backticks (`code`). */
const documented = (code: string): boolean => DOC.includes(`\`${code}\``);

describe('docs/errors.md names every error code on the wire', () => {
  it('every kind of the table, with its JSON-RPC code', () => {
    const missing = Object.keys(ERROR_TABLE).filter((kind) => !documented(kind));
    expect(missing).toEqual([]);
    const rpcCodes: number[] = [...new Set(Object.values(ErrorCode))];
    // Written with a real minus sign (−) in the table, or an ASCII one in prose.
    const undocumentedRpc = rpcCodes.filter((c) => !DOC.includes(String(c).replace('-', '−')) && !DOC.includes(String(c)));
    expect(undocumentedRpc).toEqual([]);
  });

  it('every finer HTTP or upgrade code a route builds', () => {
    const codes = codesInSource();
    expect(codes.size).toBeGreaterThan(20);
    const missing = [...codes].filter(([code]) => !documented(code)).map(([code, file]) => `${code} (${file})`);
    expect(missing).toEqual([]);
  });

  it('every DataWorks reply name', () => {
    const missing = Object.keys(REPLY_ERRORS).filter((name) => !documented(name));
    expect(missing).toEqual([]);
  });
});

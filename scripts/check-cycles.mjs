#!/usr/bin/env node
// The shape checks `npm run lint` runs after biome (docs/architecture.md, "Shape checks"):
//   1. no import cycles in server/, shared/, cli/, app/, scripts/ — every `import`, `import type`,
//      `export … from` and `import('…')` counts; `.js` specifiers resolve to the `.ts` beside them;
//   2. no file over 400 lines in app/, none over 500 in the other product folders;
//   3. every repository path and code name docs/architecture.md and AGENTS.md name in backticks
//      exists (a `Type.member` in the file that declares the type);
//   4. no HTTP status number (100–599) written as a status outside the error table and its
//      renderer (`STATUS_HOMES`): an argument of `writeHead`, `refuse`, `respond`, `send…` or an
//      error's constructor, a `status`/`statusCode` property, an assignment to `.statusCode`, or
//      the return of a function named `…Status` (reading a status another server answered is not checked).
// Exits 1 with one line per finding. `--json` prints the figures instead (files, edges, cycles,
// problems); `--root DIR` checks another checkout (test/unit/check-cycles.test.ts).
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const rootArg = process.argv.indexOf('--root');
/** The checkout to check: this script's own, or `--root DIR` (the script's test plants cycles in a temporary one). */
const root = rootArg > 0 ? resolve(process.argv[rootArg + 1] ?? '.') : resolve(dirname(fileURLToPath(import.meta.url)), '..');
const PRODUCT = ['server', 'shared', 'cli', 'app', 'scripts'];
const SOURCE = /\.(ts|mts|mjs|js)$/;
const MAX_LINES = { app: 400, default: 500 };

/** Every source file under the product folders, as repository-relative paths with `/`. */
function sourceFiles() {
  const out = [];
  const walk = (dir) => {
    for (const name of readdirSync(join(root, dir))) {
      if (name === 'node_modules' || name.startsWith('.')) continue;
      const rel = `${dir}/${name}`;
      const st = statSync(join(root, rel));
      if (st.isDirectory()) walk(rel);
      else if (SOURCE.test(name) && !name.endsWith('.d.ts')) out.push(rel);
    }
  };
  for (const dir of PRODUCT) if (existsSync(join(root, dir))) walk(dir);
  return out.sort();
}

/** The module specifiers a file imports or re-exports, type-only ones included. */
function specifiersOf(file, text) {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false);
  const specs = [];
  const visit = (node) => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      specs.push(node.moduleSpecifier.text);
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference) && ts.isStringLiteral(node.moduleReference.expression)) {
      specs.push(node.moduleReference.expression.text);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && node.arguments[0] && ts.isStringLiteral(node.arguments[0])) {
      specs.push(node.arguments[0].text);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      specs.push(node.argument.literal.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return specs;
}

/** A relative specifier resolved to a file of the set, or undefined (packages, node:*). */
function resolveSpecifier(from, spec, known) {
  if (!spec.startsWith('.')) return undefined;
  const base = relative(root, resolve(root, dirname(from), spec)).split(sep).join('/');
  const candidates = [base, base.replace(/\.js$/, '.ts'), base.replace(/\.mjs$/, '.mts'), `${base}.ts`, `${base}/index.ts`];
  return candidates.find((c) => known.has(c));
}

/** Tarjan's strongly connected components; returns the components with more than one file (or a self-import). */
function cyclesOf(graph) {
  let index = 0;
  const idx = new Map();
  const low = new Map();
  const stack = [];
  const on = new Set();
  const found = [];
  const strong = (v) => {
    idx.set(v, index);
    low.set(v, index);
    index++;
    stack.push(v);
    on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!idx.has(w)) {
        strong(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v), idx.get(w)));
    }
    if (low.get(v) === idx.get(v)) {
      const comp = [];
      let w;
      do {
        w = stack.pop();
        on.delete(w);
        comp.push(w);
      } while (w !== v);
      if (comp.length > 1 || (graph.get(v) ?? new Set()).has(v)) found.push(comp.sort());
    }
  };
  for (const v of graph.keys()) if (!idx.has(v)) strong(v);
  return found;
}

/** One shortest loop through a component's first file, to print something a person can follow. */
function loopThrough(graph, comp) {
  const inComp = new Set(comp);
  const start = comp[0];
  const prev = new Map([[start, undefined]]);
  const queue = [start];
  while (queue.length > 0) {
    const v = queue.shift();
    for (const w of graph.get(v) ?? []) {
      if (!inComp.has(w)) continue;
      if (w === start) {
        const path = [start];
        for (let u = v; u !== start; u = prev.get(u)) path.splice(1, 0, u);
        return [...path, start];
      }
      if (!prev.has(w)) {
        prev.set(w, v);
        queue.push(w);
      }
    }
  }
  return comp;
}

/** The only files that may write an HTTP status number: the error table and the HTTP renderer. */
const STATUS_HOMES = new Set(['shared/protocol/error-kinds.ts', 'server/transport/http-reply.ts']);
/** Calls whose numeric arguments are statuses: `res.writeHead(404)`, `refuse(socket, 503, …)`, `sendJson(res, 200, …)`, `new HttpError(400, …)`. */
const STATUS_CALL = /^(writeHead|refuse|respond|send\w*|\w*Error)$/;
const STATUS_PROPERTY = /^(status|statusCode)$/;
/** The folders that answer HTTP (scripts/ and app/ only read statuses: conformance faults, fetch results). */
const STATUS_FOLDERS = new Set(['server', 'shared', 'cli']);

/** `file:line: 404` for every HTTP status literal used as a status outside `STATUS_HOMES`. */
function statusLiterals(file, text) {
  if (STATUS_HOMES.has(file) || !STATUS_FOLDERS.has(file.split('/')[0]) || !file.endsWith('.ts')) return [];
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found = [];
  const isStatus = (node) => {
    const n = Number(node.text);
    return Number.isInteger(n) && n >= 100 && n <= 599;
  };
  const nameOf = (expr) => (ts.isIdentifier(expr) ? expr.text : ts.isPropertyAccessExpression(expr) ? expr.name.text : '');
  const visit = (node) => {
    if (ts.isNumericLiteral(node) && isStatus(node)) {
      const parent = node.parent;
      let used = false;
      if ((ts.isCallExpression(parent) || ts.isNewExpression(parent)) && parent.arguments?.includes(node)) used = STATUS_CALL.test(nameOf(parent.expression));
      else if (ts.isPropertyAssignment(parent) && parent.initializer === node) used = STATUS_PROPERTY.test(parent.name.getText(sf));
      else if (ts.isBinaryExpression(parent) && parent.right === node && parent.operatorToken.kind === ts.SyntaxKind.EqualsToken) used = /statusCode$/.test(parent.left.getText(sf));
      else if (ts.isConditionalExpression(parent) && ts.isCallExpression(parent.parent) && STATUS_CALL.test(nameOf(parent.parent.expression))) used = true;
      else if (ts.isReturnStatement(parent)) {
        // A function that maps something to a status (`replyErrorStatus`) returns one.
        let fn = parent.parent;
        while (fn && !ts.isFunctionLike(fn)) fn = fn.parent;
        used = fn !== undefined && /status$/i.test(fn.name?.getText(sf) ?? '');
      }
      if (used) found.push(`${file}:${sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1}: ${node.text}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

/** The pages whose backticked paths and code names must exist. */
const NAMING_PAGES = ['docs/architecture.md', 'AGENTS.md'];

/**
 * Backticked names in the pages that do not exist: repository paths (`server/hub/hub.ts`), code
 * names (`validateParsedClientAction`, `HubState.applyRecord`, `Hub.#decide`). A `Type.member` must
 * have the member in the file that declares the type; a lone camelCase or CONSTANT name must occur
 * in the sources (product or test) as a word. All-lowercase words are prose and not checked.
 */
function missingDocNames(sources) {
  const words = new Set();
  const declaredIn = new Map();
  const basenames = new Set();
  // Names from the tests and the configuration count as existing too (helpers, vitest calls, compiler flags).
  const extra = [];
  const walk = (dir) => {
    if (!existsSync(join(root, dir))) return;
    for (const name of readdirSync(join(root, dir))) {
      if (name === 'node_modules' || name === 'fixtures' || name.startsWith('.')) continue;
      const rel = `${dir}/${name}`;
      if (statSync(join(root, rel)).isDirectory()) walk(rel);
      else if (SOURCE.test(name)) extra.push(readFileSync(join(root, rel), 'utf8'));
    }
  };
  walk('test');
  for (const config of ['tsconfig.json', 'package.json']) if (existsSync(join(root, config))) extra.push(readFileSync(join(root, config), 'utf8'));
  for (const file of sources.keys()) basenames.add(file.split('/').pop());
  for (const text of extra) for (const w of text.match(/[\w$#]+/g) ?? []) words.add(w);
  for (const [, text] of sources) {
    for (const w of text.match(/[\w$#]+/g) ?? []) words.add(w);
    for (const m of text.matchAll(/\b(?:class|interface|type|function|const|enum)\s+([A-Za-z_$][\w$]*)/g)) {
      if (!declaredIn.has(m[1])) declaredIn.set(m[1], []);
      declaredIn.get(m[1]).push(text);
    }
  }
  const missing = [];
  const top = new Set([...PRODUCT, 'test', 'bench', 'docs', 'examples']);
  for (const page of NAMING_PAGES) {
    if (!existsSync(join(root, page))) continue;
    const text = readFileSync(join(root, page), 'utf8');
    const seen = new Set();
    for (const m of text.matchAll(/`([^`\n]+)`/g)) {
      const token = m[1].trim();
      if (seen.has(token)) continue;
      seen.add(token);
      const path = token.replace(/[),.:;]+$/, '').split(/[\s(]/)[0];
      if (top.has(path.split('/')[0]) && path.includes('/') && !path.includes('*') && /\.(ts|mjs|md|json)$/.test(path)) {
        if (!existsSync(join(root, path))) missing.push(`${page} names ${path}, which does not exist`);
        continue;
      }
      // A file by its name alone (`hub.ts`): some product file has it.
      if (/^[\w.-]+\.(ts|mjs)$/.test(path)) {
        if (!basenames.has(path) && !existsSync(join(root, path))) missing.push(`${page} names ${path}, which no product folder has`);
        continue;
      }
      if (/^[\w.-]+\.(jsonc?|db|md|css|html|ya?ml|lock|head|wal)$/.test(path)) continue; // a data or config file's name
      const name = token.replace(/\(.*\)$/, '');
      if (!/^[A-Za-z_$#][\w$#]*(\.[\w$#]+)?$/.test(name) || !/[A-Z_#]|\./.test(name)) continue;
      const [owner, member] = name.split('.');
      if (member === undefined) {
        if (!words.has(owner)) missing.push(`${page} names \`${token}\`, which is not in the code`);
        continue;
      }
      // `Type.member` / `Type.#member` is looked up where the type is declared; `variable.member` by the member's word.
      const homes = /^[A-Z#]/.test(owner) ? declaredIn.get(owner) : undefined;
      const found = homes ? homes.some((t) => new RegExp(`(^|[^\\w$#])${member.replace(/[$]/g, '\\$')}\\b`).test(t)) : words.has(member) && (!/^[A-Z]/.test(owner) || words.has(owner));
      if (!found) missing.push(`${page} names \`${token}\`, which is not in the code`);
    }
  }
  return missing;
}

const files = sourceFiles();
const known = new Set(files);
const graph = new Map();
const sources = new Map();
let edges = 0;
const problems = [];
for (const f of files) {
  const text = readFileSync(join(root, f), 'utf8');
  sources.set(f, text);
  const out = new Set();
  for (const s of specifiersOf(f, text)) {
    const to = resolveSpecifier(f, s, known);
    if (to) out.add(to);
  }
  edges += out.size;
  graph.set(f, out);
  for (const at of statusLiterals(f, text)) problems.push(`status: ${at} is an HTTP status written outside the error table and its renderer: throw or send a ProtocolError of a kind, or use a helper of server/transport/http-reply.ts`);
  const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
  const max = MAX_LINES[f.split('/')[0]] ?? MAX_LINES.default;
  if (lines > max) problems.push(`size: ${f} has ${lines} lines (limit ${max}): split it by job`);
}
const cycles = cyclesOf(graph);
for (const comp of cycles) problems.push(`cycle: ${loopThrough(graph, comp).join(' → ')}${comp.length > 2 ? ` (${comp.length} files in the component)` : ''}`);
for (const p of missingDocNames(sources)) problems.push(`docs: ${p}`);

if (process.argv.includes('--json')) {
  console.log(JSON.stringify({ files: files.length, edges, cycles, problems }));
} else if (problems.length > 0) {
  for (const p of problems) console.error(p);
  console.error(`check-cycles: ${problems.length} problem(s) in ${files.length} files`);
}
process.exitCode = problems.length > 0 ? 1 : 0;

// Bundles the browser app (app/main.ts and its imports from shared/) into dist/app with esbuild,
// copies its static files, and stamps the build for scripts/build-if-needed.mjs.
import { build } from 'esbuild';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';

mkdirSync('dist', { recursive: true });
if (existsSync('app/main.ts')) {
  await build({
    entryPoints: ['app/main.ts'],
    bundle: true,
    format: 'esm',
    target: 'es2022',
    platform: 'browser',
    minify: true,
    // The map is for debugging here, not for visitors: written next to dist/app, not inside it,
    // and without a sourceMappingURL comment in the served bundle.
    sourcemap: 'external',
    outfile: 'dist/app/app.js',
    // The classic zod API without its 40+ locales and JSON-schema code (same zod modules, see
    // app/zod-lite.ts): 633 KB → 310 KB minified. Node and the type checker use the real package.
    alias: { zod: './app/zod-lite.ts' },
    logLevel: 'warning',
  });
  // A classic script for <head>: the pinned theme is on <html> before the first paint (the
  // bundle above is a deferred module). A few hundred bytes; no source map.
  await build({ entryPoints: ['app/theme-boot.ts'], bundle: true, format: 'iife', target: 'es2022', platform: 'browser', minify: true, outfile: 'dist/app/theme-boot.js', logLevel: 'warning' });
  mkdirSync('dist/sourcemaps', { recursive: true });
  renameSync('dist/app/app.js.map', 'dist/sourcemaps/app.js.map');
  if (existsSync('app/static')) cpSync('app/static', 'dist/app', { recursive: true });
  // The service worker, last: it precaches the shell just built, in a cache named after a hash of
  // those files, so every build that changes the shell installs a new worker (app/sw.ts).
  if (existsSync('app/sw.ts')) {
    const shell = readdirSync('dist/app', { withFileTypes: true })
      .filter((e) => e.isFile() && e.name !== 'sw.js')
      .map((e) => e.name)
      .sort();
    const hash = createHash('sha256');
    for (const name of shell) hash.update(name).update('\0').update(readFileSync(`dist/app/${name}`));
    await build({
      entryPoints: ['app/sw.ts'],
      bundle: true,
      format: 'iife',
      target: 'es2022',
      platform: 'browser',
      minify: true,
      outfile: 'dist/app/sw.js',
      define: { SHELL_VERSION: JSON.stringify(hash.digest('hex').slice(0, 16)), SHELL_FILES: JSON.stringify(shell.map((name) => `/${name}`)) },
      logLevel: 'warning',
    });
  }
}
writeFileSync('dist/.build-stamp', new Date().toISOString() + '\n');

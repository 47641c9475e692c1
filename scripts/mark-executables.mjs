// Makes the package's `bin` targets executable after a build. `npm ci` links and marks bin files
// only when they exist at install time, and in a fresh clone they are built later, so
// `npx ahp-hub-cli` would otherwise fail with "Permission denied".
import { chmodSync, existsSync, readFileSync } from 'node:fs';

const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
for (const target of Object.values(pkg.bin ?? {})) {
  const file = new URL(`../${target}`, import.meta.url);
  if (existsSync(file)) chmodSync(file, 0o755);
}

// `npm start` / `npm run cli` run this first: build when dist/ is missing or older than any source file.
import { execSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const roots = ['server', 'shared', 'cli', 'app', 'bench', 'examples', 'scripts'];
const stamp = 'dist/.build-stamp';

function newestMtime(dir) {
  if (!existsSync(dir)) return 0;
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs);
  }
  return newest;
}

const built = existsSync(stamp) ? statSync(stamp).mtimeMs : 0;
const sources = Math.max(...roots.map(newestMtime), statSync('package.json').mtimeMs);
if (sources > built) {
  process.stderr.write('building…\n');
  execSync('npm run build --silent', { stdio: 'inherit' });
}

/** The store password's sources and the command-line scrubbing (server/store-secret.ts). */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { connectionUrl, resolveStoreSecret, scrubbedArgv } from '../../server/store-secret.js';
import { tempDir } from '../helpers/start-server.js';

const dir = tempDir('store-secret-');
afterAll(() => dir.remove());

it('takes the password from the file (one line, the newline dropped), the URL keeping none', () => {
  const file = join(dir.dir, 'pw');
  writeFileSync(file, 'p@ss:w/rd\n');
  const secret = resolveStoreSecret('postgres://ahp@db:5432/ahp', file, {});
  expect(secret).toEqual({ url: 'postgres://ahp@db:5432/ahp', password: 'p@ss:w/rd', source: 'file' });
  expect(new URL(connectionUrl(secret)).password).toBe(encodeURIComponent('p@ss:w/rd'));
  writeFileSync(file, 'two\nlines\n');
  expect(() => resolveStoreSecret('postgres://ahp@db/ahp', file, {})).toThrow(/on one line/);
  expect(() => resolveStoreSecret('postgres://ahp@db/ahp', join(dir.dir, 'missing'), {})).toThrow(/cannot read --store-password-file/);
});

it('takes PGPASSWORD and removes it from the environment; a password in the URL is split off it', () => {
  const env: NodeJS.ProcessEnv = { PGPASSWORD: 'from-env', OTHER: 'x' };
  expect(resolveStoreSecret('postgres://ahp@db/ahp', undefined, env)).toMatchObject({ password: 'from-env', source: 'environment' });
  expect(env).toEqual({ OTHER: 'x' });
  expect(resolveStoreSecret('postgres://ahp:s%40cret@db/ahp', undefined, {})).toEqual({ url: 'postgres://ahp@db/ahp', password: 's@cret', source: 'url' });
  expect(resolveStoreSecret('postgres://ahp@db/ahp', undefined, {})).toMatchObject({ password: undefined, source: 'driver' });
  // Forms WHATWG URL refuses but libpq and pg accept (a Unix socket directory as the host).
  const socket = resolveStoreSecret('postgres://ahp:pw@/ahp?host=/run/postgresql', undefined, {});
  expect(socket).toEqual({ url: 'postgres://ahp@/ahp?host=/run/postgresql', password: 'pw', source: 'url' });
  expect(connectionUrl(socket)).toBe('postgres://ahp:pw@/ahp?host=/run/postgresql');
  expect(resolveStoreSecret('postgresql://a:b@[::1]:5432/d?sslmode=require', undefined, {}).url).toBe('postgresql://a@[::1]:5432/d?sslmode=require');
  expect(() => resolveStoreSecret('postgres://ahp:a@db/ahp', undefined, { PGPASSWORD: 'b' })).toThrow('the store password is given twice (PGPASSWORD and the --store URL)');
});

it('scrubs the password of every postgres URL in argv, in both flag forms', () => {
  expect(scrubbedArgv(['node', 'main.js', '--store', 'postgres://ahp:secret@db:5432/ahp', '--store=postgresql://u:p@q@h/d', '--port', '0'])).toEqual([
    'node',
    'main.js',
    '--store',
    'postgres://ahp@db:5432/ahp',
    '--store=postgresql://u@h/d',
    '--port',
    '0',
  ]);
});

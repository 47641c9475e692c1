/**
 * Bundle-size shim (browser build only): the classic zod API without its 40+ locales, JSON-schema
 * converters and other extras that `import { z } from 'zod'` drags into a bundle. To use it,
 * scripts/build-app.mjs passes `alias: { zod: './app/zod-lite.ts' }` to esbuild; Node and the
 * type checker keep using the real package. Paths are relative so the alias does not apply to them.
 */
import { config } from '../node_modules/zod/v4/core/index.js';
import en from '../node_modules/zod/v4/locales/en.js';

config(en());

export * as z from './zod-lite-api.js';

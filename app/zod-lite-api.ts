/** The runtime part of zod's classic API that shared/ uses (schemas, errors, parse). See zod-lite.ts. */
export * from '../node_modules/zod/v4/classic/schemas.js';
export * from '../node_modules/zod/v4/classic/errors.js';
export * from '../node_modules/zod/v4/classic/parse.js';

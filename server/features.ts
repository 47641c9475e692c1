/**
 * The feature modules `npm start` installs on top of the AHP core. Each lives in its own folder
 * and plugs into the hub through `FeatureContext` (JSON-RPC methods, HTTP routes, hub events).
 */
import type { Feature } from './server.js';

export function defaultFeatures(): Feature[] {
  return [];
}

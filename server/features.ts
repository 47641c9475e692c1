/**
 * The feature modules `npm start` installs on top of the AHP core. Each lives in its own folder
 * and plugs into the hub through `FeatureContext` (JSON-RPC methods, HTTP routes, hub events).
 */
import { collabFeature } from './collab/feature.js';
import { interactionsFeature } from './interactions/feature.js';
import { qwenServeFeature } from './qwen-serve/feature.js';
import { sessionsFeature } from './sessions/feature.js';
import type { Feature } from './feature-contract.js';
import { steeringFeature } from './steering/feature.js';
import { createPushFeature, type PushOptions } from './push/feature.js';

export function defaultFeatures(options: { push?: PushOptions } = {}): Feature[] {
  // qwen-serve answers through the interactions registry, so it installs after interactions;
  // push reads the interactions registry and collab's presence, so it installs after both.
  return [steeringFeature, interactionsFeature, collabFeature, qwenServeFeature, sessionsFeature, createPushFeature(options.push)];
}

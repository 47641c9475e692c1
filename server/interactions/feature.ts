/** Placeholder: the interactions feature is being built; it registers its routes and methods here. */
import type { Feature } from '../server.js';

export const interactionsFeature: Feature = {
  name: 'interactions',
  install() {},
};

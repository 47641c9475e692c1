/** Placeholder: the collab feature is being built; it registers its routes and methods here. */
import type { Feature } from '../server.js';

export const collabFeature: Feature = {
  name: 'collab',
  install() {},
};

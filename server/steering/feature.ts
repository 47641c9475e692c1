/** Placeholder: the steering feature is being built; it registers its routes and methods here. */
import type { Feature } from '../server.js';

export const steeringFeature: Feature = {
  name: 'steering',
  install() {},
};

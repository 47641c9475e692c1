/** The seeded PRNG lives with the scripts (the soak uses it too; scripts are built without test/). */
export { prng } from '../../scripts/prng.js';

/** A team of one tenant (two users, a viewer, an admin) and a user of another tenant, for the session-management tests. */
import type { AuthFile } from '../../server/auth/auth.js';

export const MANAGE_TOKEN = {
  alice: 'manage-alice-token-0001',
  bob: 'manage-bob-token-000001',
  victor: 'manage-victor-token-001',
  ops: 'manage-ops-token-000001',
  mallory: 'manage-mallory-token-01',
} as const;

export const MANAGE_AUTH: AuthFile = {
  tokens: [
    { token: MANAGE_TOKEN.alice, user: 'alice', tenant: 'acme', role: 'user' },
    { token: MANAGE_TOKEN.bob, user: 'bob', tenant: 'acme', role: 'user' },
    { token: MANAGE_TOKEN.victor, user: 'victor', tenant: 'acme', role: 'viewer' },
    { token: MANAGE_TOKEN.ops, user: 'ops', tenant: 'acme', role: 'admin' },
    { token: MANAGE_TOKEN.mallory, user: 'mallory', tenant: 'evil', role: 'user' },
  ],
};

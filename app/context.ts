/**
 * What every view of the browser app gets from `main.ts`: the client, who this tab is, and the
 * app-wide services. Its own module so the views can name it without importing `main.ts`.
 */
import type { AhpClient } from '../shared/client/ahp-client.js';
import type { Attention } from './attention.js';

export interface AppContext {
  readonly client: AhpClient;
  /** Who this tab is: the token's user, or in dev mode a per-tab name (so presence can be tried). */
  readonly user: string;
  readonly role: string;
  /** The signed-in user as the hub records it (session owners); `dev` in dev mode, unlike `user`. */
  readonly signedInAs: string;
  readonly canWrite: boolean;
  /** No token: the hub's single-user dev mode. */
  readonly devMode: boolean;
  /** The token this tab signed in with (undefined in dev mode), for the HTTP API (`api.ts`). */
  readonly token: string | undefined;
  readonly attention: Attention;
  navigate(path: string): void;
  /** Sets the page's own title; the app prefixes "(n) need input" while sessions wait. */
  setPageTitle(title: string): void;
}

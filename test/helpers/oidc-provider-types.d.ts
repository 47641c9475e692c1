/**
 * The few parts of `oidc-provider` (v9, which ships no types) the test provider uses
 * (test/helpers/oidc-provider.ts). Test-only: the hub itself never imports the provider.
 */
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  export type KoaContextWithOIDC = unknown;

  interface ClientModel {
    readonly clientId: string;
  }

  interface ResourceServerModel {
    readonly audience?: string;
  }

  interface AccessTokenModel {
    save(): Promise<string>;
  }

  export default class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>);
    readonly issuer: string;
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
    readonly Client: { find(id: string): Promise<ClientModel | undefined> };
    readonly ResourceServer: new (
      identifier: string,
      info: Record<string, unknown>,
    ) => ResourceServerModel;
    readonly AccessToken: new (
      fields: Record<string, unknown>,
    ) => AccessTokenModel;
  }
}

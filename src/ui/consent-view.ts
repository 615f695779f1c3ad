/**
 * What the consent page says, so that it tells the truth about who asks and for what: the
 * profile when the request asks for it (the spec's clients always do: spec-glue.ts adds
 * `openid`), each resource server asked for by the name and scopes its operator declared, and,
 * for a client that registered itself (RFC 7591) or is known only by its metadata document, that
 * it did so, how it is identified and where the answer goes (its redirect URI's host).
 *
 * @example views.respond(ctx, 'consent', { …, ...await consent({ clientId, params, details }) });
 */

/** A resource server as its operator declared it (src/resources/). */
export interface DeclaredResource {
  readonly uri: string;
  readonly name: string;
  readonly scopes: readonly string[];
}

/** How a client came to exist: the spec's registration, RFC 7591, or its metadata document. */
export type ClientOrigin = 'spec' | 'rfc7591' | 'metadata-document';

export interface ConsentDependencies {
  originOf: (clientId: string) => Promise<ClientOrigin | undefined>;
  findResource: (indicator: string) => Promise<DeclaredResource | undefined>;
}

/** The interaction as the provider describes it (interactionDetails: params and the consent prompt's details). */
export interface ConsentRequest {
  clientId: string;
  params: Record<string, unknown>;
  details: Record<string, unknown>;
}

export interface ConsentView {
  /** Whether the profile (username, e-mail address, full name) is asked for. */
  profile: boolean;
  resources: { name: string; uri: string; scopes: string[] }[];
  /** Set for a client that registered itself: how it did ("registered itself …"), and where the answer goes. */
  selfRegistered: { how: string; redirectHost: string } | undefined;
}

/** The host (or, for a native app's private-use scheme, the scheme) the answer is sent to. */
function destination(redirectUri: unknown): string {
  const url = typeof redirectUri === 'string' ? URL.parse(redirectUri) : null;
  if (!url) return 'the application';
  return url.protocol === 'http:' || url.protocol === 'https:' ? url.host : `the app that opens ${url.protocol} links`;
}

export function consentView(deps: ConsentDependencies): (request: ConsentRequest) => Promise<ConsentView> {
  return async ({ clientId, params, details }) => {
    const asked = Object.entries((details.missingResourceScopes ?? {}) as Record<string, string[]>);
    const resources = (await Promise.all(asked.map(async ([indicator, scopes]) => {
      const declared = await deps.findResource(indicator);
      // Only what the operator declared for it can be in its token: shown in their words.
      return declared && { name: declared.name, uri: declared.uri, scopes: declared.scopes.filter((scope) => scopes.includes(scope)) };
    }))).filter((resource) => resource !== undefined);
    const missingOidc = details.missingOIDCScope;
    const origin = await deps.originOf(clientId);
    const how = origin === 'rfc7591' ? 'registered itself with this service (RFC 7591)'
      : origin === 'metadata-document' ? `registered itself by publishing its description at ${clientId}` : undefined;
    return {
      profile: Array.isArray(missingOidc) ? missingOidc.includes('openid') : resources.length === 0,
      resources,
      selfRegistered: how ? { how, redirectHost: destination(params.redirect_uri) } : undefined,
    };
  };
}

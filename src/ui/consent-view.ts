/**
 * What the consent page says, so that it tells the truth about who asks and for what: the
 * profile when the request asks for it (the spec's clients always do: spec-glue.ts adds
 * `openid`), each resource server asked for by the name and scopes its operator declared, where
 * the answer goes (the redirect URI's host, always: a name is the client's own words, the host is
 * not), and, for every client that registered itself (the spec's page or JSON, RFC 7591, or a
 * metadata document), that it did so and that nobody checked it. Only a client an operator
 * created (`clients:create`) goes without that note.
 *
 * @example views.respond(ctx, 'consent', { …, ...await consent({ clientId, params, details }) });
 */

/** A resource server as its operator declared it (src/resources/). */
export interface DeclaredResource {
  readonly uri: string;
  readonly name: string;
  readonly scopes: readonly string[];
}

/** How a client came to exist: the spec's registration, RFC 7591, an operator, or its metadata document. */
export type ClientOrigin = 'spec' | 'rfc7591' | 'operator' | 'metadata-document';

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
  /** Where the answer goes: the redirect URI's host (or, for a private-use scheme, the app that opens it). */
  redirectHost: string;
  /** Set for a client that registered itself: how it did ("registered itself …"). */
  selfRegistered: { how: string } | undefined;
}

/** How each self-registered origin is told on the page; an operator's client has no entry. */
const SELF_REGISTERED: Record<Exclude<ClientOrigin, 'operator'>, (clientId: string) => string> = {
  spec: () => 'registered itself with this service',
  rfc7591: () => 'registered itself with this service (RFC 7591)',
  'metadata-document': (clientId) => `registered itself by publishing its description at ${clientId}`,
};

/** The host (or, for a native app's private-use scheme, the scheme) the answer is sent to. */
function destination(redirectUri: unknown): string {
  const url = typeof redirectUri === 'string' ? URL.parse(redirectUri) : null;
  if (!url) return 'the application';
  return url.protocol === 'http:' || url.protocol === 'https:' ? url.host : `the app that opens ${url.protocol} links`;
}

/**
 * What the page lists: what the grant lacks (a step-up asks only for what is new), or, when
 * consent is asked again with nothing new (a native app is asked each time, RFC 8252 §8.6), what
 * the request itself asks for.
 */
function askedFor(params: Record<string, unknown>, details: Record<string, unknown>): { resources: [string, string[]][]; profile: boolean } {
  const missingOidc = details.missingOIDCScope;
  const missingResources = details.missingResourceScopes as Record<string, string[]> | undefined;
  if (missingResources || Array.isArray(missingOidc)) {
    const resources = Object.entries(missingResources ?? {});
    return { resources, profile: Array.isArray(missingOidc) ? missingOidc.includes('openid') : resources.length === 0 };
  }
  const scopes = typeof params.scope === 'string' ? params.scope.split(' ').filter(Boolean) : [];
  const indicators = [params.resource].flat().filter((value): value is string => typeof value === 'string');
  return { resources: indicators.map((indicator) => [indicator, scopes]), profile: indicators.length === 0 || scopes.includes('openid') };
}

export function consentView(deps: ConsentDependencies): (request: ConsentRequest) => Promise<ConsentView> {
  return async ({ clientId, params, details }) => {
    const { resources: asked, profile } = askedFor(params, details);
    const resources = (await Promise.all(asked.map(async ([indicator, scopes]) => {
      const declared = await deps.findResource(indicator);
      // Only what the operator declared for it can be in its token: shown in their words.
      return declared && { name: declared.name, uri: declared.uri, scopes: declared.scopes.filter((scope) => scopes.includes(scope)) };
    }))).filter((resource) => resource !== undefined);
    // An origin we cannot tell (the client vanished meanwhile) is told as self-registered: the note errs on the side of caution.
    const origin = (await deps.originOf(clientId)) ?? 'spec';
    return {
      profile,
      resources,
      redirectHost: destination(params.redirect_uri),
      selfRegistered: origin === 'operator' ? undefined : { how: SELF_REGISTERED[origin](clientId) },
    };
  };
}

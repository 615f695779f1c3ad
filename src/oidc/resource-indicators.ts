/**
 * RFC 8707 resource indicators through the provider's own feature: a `resource` that names a
 * declared resource server (src/resources/) gets an access token for it alone, an RFC 9068 JWT
 * (`typ: at+jwt`) signed with the service's keys, whose `aud` is the resource's URI as declared,
 * carrying only the scopes declared for it and living its own TTL; anything else is
 * `invalid_target`. Without `resource`, the token is today's opaque one for userinfo; but a
 * client_credentials request must name a resource: a machine's token is for no user, so without
 * an audience it could be used nowhere here (userinfo serves users), and a token for nothing is
 * refused rather than issued (RFC 8707 §2: a missing resource may be `invalid_target`).
 *
 * The JWT also carries `grant_id`, the grant it was issued under (ids of grants are no secret:
 * webhook events name them too), so introspection can tell a token whose grant was revoked
 * (oidc/jwt-introspection.ts); resource servers verify the JWT offline and may ignore it.
 *
 * @see https://www.rfc-editor.org/rfc/rfc8707#section-2 (invalid_target), https://www.rfc-editor.org/rfc/rfc9068
 */
import { errors } from 'oidc-provider';
import type { Configuration } from 'oidc-provider';

/** A declared resource, as src/resources/resource-store.ts finds it. */
export interface ResourceServerDeclaration {
  readonly uri: string;
  readonly scopes: readonly string[];
  readonly accessTokenTtl: number;
}

export type FindResource = (indicator: string) => Promise<ResourceServerDeclaration | undefined>;

type Features = NonNullable<Configuration['features']>;

export function resourceIndicators(find: FindResource): NonNullable<Features['resourceIndicators']> {
  return {
    enabled: true,
    defaultResource(ctx) {
      if (ctx.oidc.route === 'token' && ctx.oidc.params?.grant_type === 'client_credentials') {
        throw new errors.InvalidTarget('a client_credentials token is for a resource server: name one with resource (RFC 8707)');
      }
      return undefined;
    },
    async getResourceServerInfo(_ctx, indicator) {
      const resource = await find(indicator);
      if (!resource) throw new errors.InvalidTarget(`${indicator} is not a resource server this service issues tokens for`);
      return {
        scope: resource.scopes.join(' '),
        audience: resource.uri,
        accessTokenTTL: resource.accessTokenTtl,
        accessTokenFormat: 'jwt',
      };
    },
  };
}

/** The provider's `formats`: a resource's JWT names its grant (see above). */
export const JWT_ACCESS_TOKEN_FORMATS: Configuration['formats'] = {
  customizers: {
    jwt(_ctx, token, jwt) {
      if ('grantId' in token && token.grantId) jwt.payload.grant_id = token.grantId;
    },
  },
};

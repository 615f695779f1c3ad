-- Resource servers an operator declared (resources:add): a `resource` (RFC 8707) that names one
-- gets an access token for it alone, an RFC 9068 JWT whose `aud` is `uri`, carrying only the
-- `scopes` declared here, living `access_token_ttl` seconds. Resources declared in the
-- RESOURCES variable are not stored here.

CREATE TABLE "resource_servers" (
    "uri" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "scopes" TEXT[] NOT NULL,
    "access_token_ttl" INTEGER NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "resource_servers_pkey" PRIMARY KEY ("uri")
);

-- A resource URI matches with or without one trailing slash (src/resources/resource-uri.ts):
-- its two spellings are one resource, found by this index.
CREATE UNIQUE INDEX "resource_servers_match_key" ON "resource_servers" ((regexp_replace("uri", '/$', '')));

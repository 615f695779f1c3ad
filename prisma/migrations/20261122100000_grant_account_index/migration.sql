-- A user's grants, for the authorized-applications page (src/oidc/authorized-apps.ts).
-- An expression index, which prisma/schema.prisma cannot describe (noted on OidcModel there).
-- The expiry cleanup needs no new index: "oidc_models_expires_at_idx" exists since the init migration.
CREATE INDEX "oidc_models_grant_account_idx" ON "oidc_models" (("payload"->>'accountId')) WHERE "type" = 'Grant';

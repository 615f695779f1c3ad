-- Clients that register themselves (RFC 7591) beside the spec's own registration: one model, two
-- dialects. `registration` names the dialect that registered the client: 'spec' (the spec's
-- /api/register.php shape: one redirect URI, always a secret) or 'rfc7591' (OAuth 2.0 Dynamic
-- Client Registration). `metadata` holds an RFC 7591 client's metadata as it registered it ({}
-- for the spec's clients). A public client (token_endpoint_auth_method "none") has no secret;
-- every spec client still has one. `last_used_at` is when the client last obtained tokens
-- (written at most once a day), so that the cleanup job can remove self-registered clients
-- unused for DYNAMIC_CLIENT_IDLE_DAYS.

ALTER TABLE "clients" ALTER COLUMN "client_secret_hash" DROP NOT NULL;
ALTER TABLE "clients" ADD COLUMN "registration" TEXT NOT NULL DEFAULT 'spec';
ALTER TABLE "clients" ADD COLUMN "metadata" JSONB NOT NULL DEFAULT '{}';
ALTER TABLE "clients" ADD COLUMN "last_used_at" TIMESTAMPTZ(3);
ALTER TABLE "clients" ADD CONSTRAINT "clients_registration_check" CHECK ("registration" IN ('spec', 'rfc7591'));
ALTER TABLE "clients" ADD CONSTRAINT "clients_secret_check" CHECK ("registration" = 'rfc7591' OR "client_secret_hash" IS NOT NULL);

-- The cleanup job's sweep of idle self-registered clients, longest idle first.
CREATE INDEX "clients_idle_idx" ON "clients" ((COALESCE("last_used_at", "created_at"))) WHERE "registration" = 'rfc7591';

-- Clients described by their metadata (RFC 7591, or an operator's with grant types or keys) need
-- neither a redirect URI nor a secret: a machine client (client_credentials) is redirected
-- nowhere, and a private_key_jwt client proves itself with its keys. Only a client in the spec's
-- shape (metadata '{}': one redirect URI, client_secret_post) must keep both.

ALTER TABLE "clients" ALTER COLUMN "redirect_uri" DROP NOT NULL;
ALTER TABLE "clients" DROP CONSTRAINT "clients_secret_check";
ALTER TABLE "clients" ADD CONSTRAINT "clients_secret_check" CHECK ("metadata" <> '{}'::jsonb OR "client_secret_hash" IS NOT NULL);
ALTER TABLE "clients" ADD CONSTRAINT "clients_redirect_check" CHECK ("metadata" <> '{}'::jsonb OR "redirect_uri" IS NOT NULL);

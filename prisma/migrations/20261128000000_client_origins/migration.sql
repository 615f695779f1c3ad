-- Clients an operator created (the CLI's clients:create) beside those that registered themselves:
-- `registration` 'operator'. Only an operator's client was checked by anyone: consent names every
-- other as self-registered, and the idle sweep never removes one.
--
-- The sweep now also removes a client that registered itself in the spec's shape and never
-- obtained a token (its uses are recorded from now on, as RFC 7591 clients' are). Uses of the
-- spec's clients were never recorded before, so those already here count as used: none of them is
-- taken for never used.

ALTER TABLE "clients" DROP CONSTRAINT "clients_registration_check";
ALTER TABLE "clients" ADD CONSTRAINT "clients_registration_check" CHECK ("registration" IN ('spec', 'rfc7591', 'operator'));
UPDATE "clients" SET "last_used_at" = now() WHERE "registration" = 'spec' AND "last_used_at" IS NULL;

-- The sweep's second kind: the spec's self-registered clients never used, oldest first.
CREATE INDEX "clients_never_used_idx" ON "clients" ("created_at") WHERE "registration" = 'spec' AND "last_used_at" IS NULL;

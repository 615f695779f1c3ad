-- A rotated client secret keeps working for a grace period beside the new one, so that every
-- running instance of the client can switch without a failed request (docs/rotating-credentials.md).
-- "previous_secret_hash" is the SHA-256 digest of the secret replaced by the last rotation, kept
-- while the grace lasts (NULL after a rotation with no grace, or once ended early);
-- "previous_secret_expires_at" is when it stops, or stopped, working (NULL: never rotated).

-- AlterTable
ALTER TABLE "clients" ADD COLUMN "previous_secret_hash" TEXT,
ADD COLUMN "previous_secret_expires_at" TIMESTAMPTZ(3);

-- A rotated webhook signing secret keeps signing beside the new one for a grace period: every
-- delivery then carries both signatures in `webhook-signature` (Standard Webhooks), so a receiver
-- switches to the new secret when it likes (docs/rotating-credentials.md). "previous_secret" is the
-- secret replaced by the last rotation while its grace lasts (NULL after a rotation with no grace);
-- "previous_secret_expires_at" is when it stops, or stopped, signing (NULL: never rotated).

-- AlterTable
ALTER TABLE "webhook_endpoints" ADD COLUMN "previous_secret" TEXT,
ADD COLUMN "previous_secret_expires_at" TIMESTAMPTZ(3);

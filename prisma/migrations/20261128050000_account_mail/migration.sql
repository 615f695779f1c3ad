-- Accounts people look after themselves (docs/accounts.md): whether a user's e-mail address is
-- verified (the `email_verified` claim), the links mailed to them (password reset, address
-- verification), and the outbox the mails wait in until the SMTP server takes them.

-- AlterTable
ALTER TABLE "users" ADD COLUMN "email_verified" BOOLEAN NOT NULL DEFAULT false;

-- A mailed link's token, stored only as its SHA-256 digest: single-use ("used_at"), valid until
-- "expires_at", and only for the address it was mailed to ("email").
-- CreateTable
CREATE TABLE "account_tokens" (
    "digest" TEXT NOT NULL,
    "purpose" TEXT NOT NULL,
    "user_id" UUID NOT NULL,
    "email" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "used_at" TIMESTAMPTZ(3),

    CONSTRAINT "account_tokens_pkey" PRIMARY KEY ("digest")
);

-- CreateIndex
CREATE INDEX "account_tokens_user_id_purpose_idx" ON "account_tokens"("user_id", "purpose");

-- CreateIndex
CREATE INDEX "account_tokens_expires_at_idx" ON "account_tokens"("expires_at");

-- AddForeignKey
ALTER TABLE "account_tokens" ADD CONSTRAINT "account_tokens_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- The mail outbox: one mail to send a row ("kind": password_reset, email_verification), claimed
-- by a worker with a lease and retried. A row holds no link: the worker makes the link's token
-- when it sends, so no live token is ever stored. A password reset's row holds the address as
-- typed ("recipient", "user_id" null): whether it names a user is found out by the worker, not
-- by the request. status: pending | sent | failed | expired | no_account | limited.
-- CreateTable
CREATE TABLE "mail_outbox" (
    "id" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "recipient" TEXT NOT NULL,
    "user_id" UUID,
    "status" TEXT NOT NULL DEFAULT 'pending',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "next_attempt_at" TIMESTAMPTZ(3),
    "lease_owner" TEXT,
    "lease_expires_at" TIMESTAMPTZ(3),
    "send_before" TIMESTAMPTZ(3) NOT NULL,
    "last_error" TEXT,
    "sent_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "mail_outbox_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "mail_outbox_status_next_attempt_at_idx" ON "mail_outbox"("status", "next_attempt_at");

-- CreateIndex
CREATE INDEX "mail_outbox_created_at_idx" ON "mail_outbox"("created_at");

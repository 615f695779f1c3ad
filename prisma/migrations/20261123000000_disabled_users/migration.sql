-- A user can be disabled by an operator (`node dist/cli.js users:disable`): while "disabled_at"
-- is set the user cannot log in, and the provider treats the account as absent.

-- AlterTable
ALTER TABLE "users" ADD COLUMN "disabled_at" TIMESTAMPTZ(3);

-- An operator can end a user's sessions (`users:sign-out`, and `users:set-password` and
-- `users:disable` with their change): every login session, and every sign-in of the
-- applications page, made at or before "sessions_ended_at" is over; the user signs in again.

-- AlterTable
ALTER TABLE "users" ADD COLUMN "sessions_ended_at" TIMESTAMPTZ(3);

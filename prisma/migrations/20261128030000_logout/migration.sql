-- Logout (OpenID Connect RP-Initiated and Back-Channel Logout).
--
-- Which applications a login session signed in to is kept as provider-model rows of type
-- 'SessionClient' in "oidc_models" (uid: the session's uid; payload: accountId, clientId, sid,
-- grantId, offline), so that ending a user's sessions from anywhere (the CLI included, which has
-- no Redis) finds every application to tell. Listed by account here; by session through the
-- (type, uid) index that exists already.
CREATE INDEX "oidc_models_session_client_account_idx" ON "oidc_models" ((payload->>'accountId')) WHERE type = 'SessionClient';

-- The outbox of back-channel logout tokens: one message a client to tell, delivered by the
-- webhook worker (leases, retry schedule, outbound guard) to the client's backchannel_logout_uri,
-- its logout token signed afresh at each attempt.
CREATE TABLE "backchannel_logouts" (
    "id" TEXT NOT NULL,
    "client_id" TEXT NOT NULL,
    "url" TEXT NOT NULL,
    "account_id" TEXT NOT NULL,
    "sid" TEXT,
    "status" TEXT NOT NULL DEFAULT 'pending',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "next_attempt_at" TIMESTAMPTZ(3),
    "lease_owner" TEXT,
    "lease_expires_at" TIMESTAMPTZ(3),
    "last_attempt_at" TIMESTAMPTZ(3),
    "last_status_code" INTEGER,
    "last_error" TEXT,
    "delivered_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "backchannel_logouts_pkey" PRIMARY KEY ("id")
);

CREATE INDEX "backchannel_logouts_status_next_attempt_at_idx" ON "backchannel_logouts"("status", "next_attempt_at");
CREATE INDEX "backchannel_logouts_client_id_created_at_idx" ON "backchannel_logouts"("client_id", "created_at");
CREATE INDEX "backchannel_logouts_created_at_idx" ON "backchannel_logouts"("created_at");

-- The audit trail: one security event a row (src/audit/audit-log.ts, README "Audit trail").
-- "user_id" and "client_id" are plain text without foreign keys: the rows outlive the users and
-- clients they name. "detail" never holds a secret. Rows older than AUDIT_RETENTION_DAYS are
-- deleted by the cleanup job, oldest first ("audit_events_created_at_idx").

-- CreateTable
CREATE TABLE "audit_events" (
    "id" BIGSERIAL NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "event" TEXT NOT NULL,
    "actor" TEXT NOT NULL,
    "user_id" TEXT,
    "client_id" TEXT,
    "address" TEXT,
    "request_id" TEXT,
    "detail" JSONB NOT NULL DEFAULT '{}',

    CONSTRAINT "audit_events_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "audit_events_created_at_idx" ON "audit_events"("created_at");

-- CreateIndex
CREATE INDEX "audit_events_user_id_created_at_idx" ON "audit_events"("user_id", "created_at");

-- CreateIndex
CREATE INDEX "audit_events_client_id_created_at_idx" ON "audit_events"("client_id", "created_at");

-- The keys that sign ID tokens (and JWT access tokens), shared by every instance
-- (src/store/signing-keys.ts, docs/signing-keys.md). A key's state follows from its times and
-- the clock, so every instance switches at the same stored moment:
--   next      until current_at      published, not signing
--   current   until retiring_at     published, signing (NULL: until a rotation replaces it)
--   retiring  until retired_at      published until every token it signed has expired
--   retired                         not published; private_jwk is erased
-- "private_jwk" holds the private JWK sealed with AES-256-GCM under KEYS_ENCRYPTION_KEY
-- (src/store/key-encryption.ts), never in the clear.

-- CreateTable
CREATE TABLE "signing_keys" (
    "kid" TEXT NOT NULL,
    "alg" TEXT NOT NULL,
    "public_jwk" JSONB NOT NULL,
    "private_jwk" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "current_at" TIMESTAMPTZ(3) NOT NULL,
    "retiring_at" TIMESTAMPTZ(3),
    "retired_at" TIMESTAMPTZ(3),

    CONSTRAINT "signing_keys_pkey" PRIMARY KEY ("kid"),
    CONSTRAINT "signing_keys_times_check" CHECK (
        ("retiring_at" IS NULL AND "retired_at" IS NULL)
        OR ("retiring_at" IS NOT NULL AND "retired_at" IS NOT NULL
            AND "retiring_at" >= "current_at" AND "retired_at" >= "retiring_at"))
);

-- At most one key has no successor yet (the current key, or the next one once a rotation
-- started): two rotations cannot both replace the same key.
CREATE UNIQUE INDEX "signing_keys_one_unreplaced_idx" ON "signing_keys" ((true)) WHERE "retiring_at" IS NULL;

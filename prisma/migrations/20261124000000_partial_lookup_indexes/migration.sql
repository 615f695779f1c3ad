-- The (type, uid) and (type, user_code) indexes serve lookups of a value (findByUid,
-- findByUserCode in src/oidc/postgres-adapter.ts), and most rows (tokens, codes, grants) have
-- neither. As full indexes they held an entry for every row, and the planner could take one for a
-- lookup by (type, id): with statistics gathered while a type was rare (a table of a million
-- tokens is analysed again only after 10 % of it changed), "type = 'AuthorizationCode'" looked
-- like one row, and each code's consume read every code in the table through the smaller index
-- (27 ms instead of 0.3 ms with 9,000 codes among 2,000,000 tokens; `npm run bench -- --seed-tokens`
-- found it). Partial indexes cannot serve a lookup by id, and they hold only the rows they find.
DROP INDEX "oidc_models_type_uid_idx";
CREATE INDEX "oidc_models_type_uid_idx" ON "oidc_models"("type", "uid") WHERE "uid" IS NOT NULL;

DROP INDEX "oidc_models_type_user_code_idx";
CREATE INDEX "oidc_models_type_user_code_idx" ON "oidc_models"("type", "user_code") WHERE "user_code" IS NOT NULL;

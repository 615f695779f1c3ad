-- A deleted client's webhook endpoints outlive it until their pending deliveries end, so the
-- `token.revoked` events of the grants its deletion ends still reach its receivers (issue 11:
-- "deleting a client ... the client gets `token.revoked` webhooks"). The endpoint loses its
-- client (NULL): no new event is written for it and no API or page lists it; the delivery
-- worker still sends what it has pending, and the cleanup job removes it, with its delivery
-- log, once nothing is pending.

-- AlterTable
ALTER TABLE "webhook_endpoints" ALTER COLUMN "client_id" DROP NOT NULL;

-- DropForeignKey
ALTER TABLE "webhook_endpoints" DROP CONSTRAINT "webhook_endpoints_client_id_fkey";

-- AddForeignKey
ALTER TABLE "webhook_endpoints" ADD CONSTRAINT "webhook_endpoints_client_id_fkey" FOREIGN KEY ("client_id") REFERENCES "clients"("client_id") ON DELETE SET NULL ON UPDATE CASCADE;

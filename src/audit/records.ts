/**
 * The one way to say that something happened: an audit row, a webhook event and a counted
 * metric, each written with the change it describes and told (its audit line logged, the
 * webhook worker woken, the metric counted) only once that change committed. A change that
 * rolls back, or a consume that lost its race, records nothing.
 *
 * Where the records go depends on where the change is made, never on what is recorded:
 *
 * | place                   | made with          | the records are written                                                   |
 * |-------------------------|--------------------|---------------------------------------------------------------------------|
 * | a request's writes      | `records.request`  | in the request's one write statement (store/request-state.ts), with its other writes, before the answer leaves; outside a request, as a statement of their own, at once |
 * | on their own            | `records.alone`    | as a statement of their own, at once, whatever the request does next (a sign-in's outcome, a worker's mail) |
 * | a change's transaction  | `records.change`   | in the change's Prisma transaction: the row with the change, the event through the write statement inside it |
 *
 * Made once in the composition root (app.ts, the CLI) and passed down.
 *
 * @example await records.change(async (tx, record) => { await tx.user.update(…); await record.event('client.updated', …); await record.audit('user.enabled', { user: id }, context); });
 */
import type { Metrics } from '../ops/metrics.js';
import { currentState, Writes } from '../store/request-state.js';
import type { WriteSender } from '../store/write-sender.js';
import { writeInTransaction } from '../store/write-sender.js';
import type { EventType } from '../webhooks/events.js';
import type { Writer } from '../webhooks/outbox.js';
import type { RaiseData, WebhookService } from '../webhooks/webhook-service.js';
import type { AuditEventName } from './audit-events.js';
import type { AuditContext, AuditFields, AuditLog } from './audit-log.js';

/** The metrics that count a fact by one label (a token issued by grant type). */
export type Counter = { [K in keyof Metrics]: Metrics[K] extends (label: string) => void ? K : never }[keyof Metrics];

/**
 * Says what happened, in the place it was made for (the table above). In a transaction each
 * record is written as it is said (`Written` a promise); on writes, it is added to them (void).
 */
export interface Recorder<Written = Promise<void>> {
  /** An audit row (audit/audit-log.ts): who acted, on whom, with what detail. */
  audit(event: AuditEventName, fields: AuditFields, context: AuditContext): Written;
  /** A webhook event, one message for each endpoint of `data.client_id` subscribed to `type`. */
  event(type: EventType, data: RaiseData): Written;
  /** A metric counted once the records committed. */
  count(counter: Counter, label: string): void;
}

/** A change and its records in one transaction; `tx` writes the change. */
export type ChangeTransaction = <T>(change: (tx: Writer, record: Recorder) => Promise<T>) => Promise<T>;

export interface Records {
  /**
   * Runs `run` with a recorder on the current request's writes (and the writes themselves, for a
   * caller that adds its own rows to the same statement); outside a request, on writes sent as
   * one statement once `run` returned.
   */
  request(run: (record: Recorder<void>, writes: Writes) => void): Promise<void>;
  /** Runs `run` with a recorder whose records are sent as one statement of their own once it resolved. */
  alone(run: (record: Recorder<void>) => void): Promise<void>;
  /** Runs `change` in one transaction with its records; they are told once it committed. */
  readonly change: ChangeTransaction;
}

export interface RecordsDependencies {
  /** Opens the change's transaction (Prisma's `$transaction`). */
  transaction: <T>(run: (tx: Writer) => Promise<T>, options?: { timeout?: number }) => Promise<T>;
  audit: Pick<AuditLog, 'add' | 'within'>;
  webhooks: Pick<WebhookService, 'add'>;
  /** Counts; nothing is counted without its registry (ops/metrics.ts `NO_METRICS`). */
  metrics: Pick<Metrics, 'registry' | Counter>;
  /** The request path's write statement (store/write-sender.ts). */
  send: WriteSender;
  /** How long one change may take (Prisma's 5 s unless given; the CLI gives ADMIN_TRANSACTION_TIMEOUT_MS). */
  timeoutMs?: number;
}

export function createRecords({ transaction, audit, webhooks, metrics, send, timeoutMs }: RecordsDependencies): Records {
  const count = (writes: Writes, counter: Counter, label: string) => {
    if (metrics.registry) writes.committed.push(() => metrics[counter](label));
  };
  /** Whether `writes` have anything to send (a row, or something to tell once committed). */
  const owed = (writes: Writes) => !writes.empty || writes.committed.length > 0;
  /** A recorder that adds to `writes`. */
  const onWrites = (writes: Writes): Recorder<void> => ({
    audit: (event, fields, context) => audit.add(writes, event, fields, context),
    event(type, data) {
      // A client the request read without webhook endpoints: nothing to write.
      if (currentState()?.clientHasWebhooks.get(data.client_id) !== false) webhooks.add(writes, type, data);
    },
    count: (counter, label) => count(writes, counter, label),
  });

  return {
    async request(run) {
      const state = currentState();
      const writes = state?.writes ?? new Writes();
      run(onWrites(writes), writes);
      if (!state && owed(writes)) await send(writes);
    },
    async alone(run) {
      const writes = new Writes();
      run(onWrites(writes));
      // Awaited here: written before the caller goes on, whatever it does next.
      if (owed(writes)) await send(writes);
    },
    change: (change) => audit.within((write) => {
      // Told once the transaction committed: each event's (the worker woken) with the events that got a message, and the counts.
      const told = new Writes();
      const announced = new Set<string>();
      return transaction(async (tx) => change(tx, {
        audit: (event, fields, context) => write(tx, event, fields, context),
        async event(type, data) {
          const writes = new Writes();
          webhooks.add(writes, type, data);
          const query = async <Row>({ text, values }: { text: string; values: unknown[] }) => ({ rows: await tx.$queryRawUnsafe<Row[]>(text, ...values) });
          for (const id of await writeInTransaction(query, writes)) announced.add(id);
          told.committed.push(...writes.committed);
        },
        count: (counter, label) => count(told, counter, label),
      }), timeoutMs === undefined ? undefined : { timeout: timeoutMs }).then((result) => {
        for (const done of told.committed) done(announced);
        return result;
      });
    }),
  };
}

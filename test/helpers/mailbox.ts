/**
 * A real SMTP server in the test process (smtp-server, on a free loopback port): every mail it
 * takes is parsed (mailparser) and kept. `failNext(n)` answers the next n mails with a temporary
 * failure (451), to prove retries.
 *
 * @example const box = await startMailbox(); env.SMTP_URL = box.url; const mail = await box.next('alice@example.com');
 */
import type { AddressInfo } from 'node:net';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';

export interface ReceivedMail {
  to: string;
  from: string;
  subject: string;
  text: string;
  /** Every http(s) link in the text. */
  links: string[];
}

export interface Mailbox {
  readonly url: string;
  readonly received: ReceivedMail[];
  /** Resolves the first mail to `to` not taken yet (polls; fails after `timeoutMs`). */
  next(to: string, timeoutMs?: number): Promise<ReceivedMail>;
  /** Mails to `to` not taken by {@link next} yet. */
  waiting(to: string): ReceivedMail[];
  failNext(count: number): void;
  /** How many mails were refused with a temporary failure so far. */
  readonly refused: number;
  close(): Promise<void>;
}

export async function startMailbox(): Promise<Mailbox> {
  const received: ReceivedMail[] = [];
  const taken = new Set<ReceivedMail>();
  let failures = 0;
  let refused = 0;
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, _session, callback) {
      if (failures > 0) {
        failures -= 1;
        refused += 1;
        stream.resume();
        stream.on('end', () => { callback(Object.assign(new Error('try again later'), { responseCode: 451 })); });
        return;
      }
      simpleParser(stream).then((parsed) => {
        const to = [parsed.to ?? []].flat().flatMap((a) => a.value.map((v) => v.address ?? '')).join(',');
        const text = parsed.text ?? '';
        received.push({ to, from: parsed.from?.text ?? '', subject: parsed.subject ?? '', text, links: text.match(/https?:\/\/\S+/g) ?? [] });
        callback();
      }, callback);
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.server.address() as AddressInfo;
  const waiting = (to: string) => received.filter((mail) => !taken.has(mail) && mail.to.toLowerCase() === to.toLowerCase());
  return {
    url: `smtp://127.0.0.1:${port}`,
    received,
    waiting,
    async next(to, timeoutMs = 15_000) {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const [mail] = waiting(to);
        if (mail) {
          taken.add(mail);
          return mail;
        }
        if (Date.now() > until) throw new Error(`no mail to ${to} within ${timeoutMs} ms (received: ${received.map((m) => m.to).join(', ') || 'none'})`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    failNext(count) { failures = count; },
    get refused() { return refused; },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

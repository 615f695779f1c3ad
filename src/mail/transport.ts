/**
 * Where a mail goes: an SMTP server (nodemailer, from SMTP_URL), or, in the embedded default
 * without SMTP_URL, the log (one `mail` line a mail, with its text, so a person running the
 * service on their machine can follow a link).
 *
 * @example const transport = smtpTransport(config.mail); await transport.send({ to, subject, text });
 */
import nodemailer from 'nodemailer';
import type { MailConfig } from '../config.js';
import type { Logger } from '../ops/logger.js';

export interface Mail {
  to: string;
  subject: string;
  text: string;
}

/** A refusal the server gave for good (5xx): the mail is not tried again. */
export class PermanentMailError extends Error {
  override name = 'PermanentMailError';
}

export interface MailTransport {
  /** Resolves once the server accepted the mail; a 5xx answer is a {@link PermanentMailError}. */
  send(mail: Mail): Promise<void>;
  close(): void;
}

export function smtpTransport(mail: Pick<MailConfig, 'smtpUrl' | 'from' | 'timeoutMs'>): MailTransport {
  const transporter = nodemailer.createTransport({
    url: mail.smtpUrl!,
    connectionTimeout: mail.timeoutMs,
    greetingTimeout: mail.timeoutMs,
    socketTimeout: mail.timeoutMs,
  } as Parameters<typeof nodemailer.createTransport>[0], { from: mail.from });
  return {
    async send({ to, subject, text }) {
      try {
        await transporter.sendMail({ to, subject, text, disableFileAccess: true, disableUrlAccess: true });
      } catch (error) {
        const code = (error as { responseCode?: number }).responseCode;
        if (code !== undefined && code >= 500) throw new PermanentMailError(`the SMTP server refused the mail (${code})`);
        throw error;
      }
    },
    close: () => transporter.close(),
  };
}

/** The embedded default without SMTP_URL: each mail is a log line (info), link and all. */
export function logTransport(logger: Logger, from: string): MailTransport {
  return {
    async send({ to, subject, text }) {
      logger.info({ mail_from: from, mail_to: to, subject, text }, 'mail (not sent: SMTP_URL is unset, so mails go to this log)');
    },
    close() {},
  };
}

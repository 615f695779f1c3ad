/** SMTP_URL, MAIL_FROM and the mailed links' lifetimes (src/config/mail.ts). */
import { describe, expect, test } from '@jest/globals';
import { ConfigError, loadConfig } from '../../src/config.js';

const mail = (env: Record<string, string>) => loadConfig(env).mail;

describe('mail configuration', () => {
  test('embedded without SMTP_URL: the log; a database of its own without it: off; SMTP_URL: smtp', () => {
    expect(mail({}).mode).toBe('log');
    expect(mail({ DATABASE_URL: 'postgres://db/oauth' }).mode).toBe('off');
    expect(mail({ DATABASE_URL: 'postgres://db/oauth', SMTP_URL: 'smtp://mail.example:587' })).toMatchObject({ mode: 'smtp', smtpUrl: 'smtp://mail.example:587' });
    expect(mail({ SMTP_URL: 'smtps://user:pw@mail.example' }).mode).toBe('smtp');
  });

  test('link lifetimes in the duration notation; MAIL_FROM an address or "Name <address>"', () => {
    expect(mail({ PASSWORD_RESET_TTL: '15m', EMAIL_VERIFICATION_TTL: '2d' })).toMatchObject({ passwordResetTtlMs: 900_000, emailVerificationTtlMs: 172_800_000 });
    expect(mail({ MAIL_FROM: 'Accounts <accounts@example.com>' }).from).toBe('Accounts <accounts@example.com>');
    expect(mail({ BASE_URL: 'http://auth.example.com:8080' }).from).toBe('no-reply@auth.example.com');
  });

  test.each([
    ['SMTP_URL', 'http://mail.example'],
    ['SMTP_URL', 'not a url'],
    ['MAIL_FROM', 'nobody'],
    ['MAIL_FROM', 'a@example.com\r\nBcc: x@example.com'],
    ['PASSWORD_RESET_TTL', '30'],
    ['PASSWORD_RESET_TTL', '30s'],
    ['PASSWORD_RESET_TTL', '2d'],
    ['EMAIL_VERIFICATION_TTL', '8d'],
  ])('%s=%j stops start-up, naming the variable', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(name);
  });
});

/**
 * Standard Webhooks signatures: verifiable by the `standardwebhooks` package; every attempt signed
 * afresh; while a rotated secret's grace lasts, signed with both secrets (new first).
 */
import { describe, expect, test } from '@jest/globals';
import { Webhook } from 'standardwebhooks';
import { generateSigningSecret, signedHeaders, signingSecrets } from '../../src/webhooks/signing.js';

describe('signing', () => {
  test('a secret is whsec_ + 32 random bytes in base64', () => {
    const secret = generateSigningSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice(6), 'base64')).toHaveLength(32);
    expect(generateSigningSecret()).not.toBe(secret);
  });

  test('the headers verify; another body, secret or an old timestamp does not', () => {
    const secret = generateSigningSecret();
    const body = JSON.stringify({ id: 'evt_1', type: 'webhook.test', created_at: new Date().toISOString(), data: {} });
    const headers = signedHeaders(secret, 'msg_1', new Date(), body);
    expect(headers['webhook-id']).toBe('msg_1');
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
    expect(() => new Webhook(secret).verify(body.replace('evt_1', 'evt_2'), headers)).toThrow();
    expect(() => new Webhook(generateSigningSecret()).verify(body, headers)).toThrow();
    const old = signedHeaders(secret, 'msg_1', new Date(Date.now() - 6 * 60_000), body);
    expect(() => new Webhook(secret).verify(body, old)).toThrow(/timestamp/i);
  });

  test('a retry, signed later, has the same webhook-id and its own timestamp and signature', () => {
    const secret = generateSigningSecret();
    const first = signedHeaders(secret, 'msg_1', new Date(Date.now() - 60_000), '{}');
    const retry = signedHeaders(secret, 'msg_1', new Date(), '{}');
    expect(retry['webhook-id']).toBe(first['webhook-id']);
    expect(retry['webhook-timestamp']).not.toBe(first['webhook-timestamp']);
    expect(retry['webhook-signature']).not.toBe(first['webhook-signature']);
  });

  test('during a rotation: two signatures, space-separated, new first; a receiver with either secret verifies, one with neither does not', () => {
    const [fresh, old] = [generateSigningSecret(), generateSigningSecret()];
    const body = JSON.stringify({ id: 'evt_1', type: 'webhook.test', created_at: new Date().toISOString(), data: {} });
    const headers = signedHeaders([fresh, old], 'msg_1', new Date(), body);
    const signatures = headers['webhook-signature']!.split(' ');
    expect(signatures).toEqual([signedHeaders(fresh, 'msg_1', new Date(Number(headers['webhook-timestamp']) * 1000), body)['webhook-signature'], expect.stringMatching(/^v1,/)]);
    expect(new Webhook(fresh).verify(body, headers)).toEqual(JSON.parse(body));
    expect(new Webhook(old).verify(body, headers)).toEqual(JSON.parse(body));
    expect(() => new Webhook(generateSigningSecret()).verify(body, headers)).toThrow();
  });

  test('the old secret signs only before its grace ends', () => {
    const endpoint = { secret: 'whsec_new', previousSecret: 'whsec_old', previousSecretExpiresAt: new Date('2026-11-27T12:00:00Z') };
    expect(signingSecrets(endpoint, new Date('2026-11-27T11:59:59.999Z'))).toEqual(['whsec_new', 'whsec_old']);
    expect(signingSecrets(endpoint, new Date('2026-11-27T12:00:00Z'))).toEqual(['whsec_new']);
    expect(signingSecrets({ ...endpoint, previousSecret: null }, new Date(0))).toEqual(['whsec_new']);
    expect(signingSecrets({ ...endpoint, previousSecretExpiresAt: null }, new Date(0))).toEqual(['whsec_new']);
  });
});

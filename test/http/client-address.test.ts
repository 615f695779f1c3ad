/** A request's address written one way (the audit trail, the access log), and its key for the rate limits and the login guard: IPv4 as is, IPv6 by its /64. */
import { describe, expect, test } from '@jest/globals';
import { addressKey, normalAddress } from '../../src/http/client-address.js';

describe('addressKey', () => {
  test.each([
    ['203.0.113.7', '203.0.113.7'],
    ['203.0.113.7:51234', '203.0.113.7'],
    [' 203.0.113.7 ', '203.0.113.7'],
    ['::ffff:127.0.0.1', '127.0.0.1'],
    ['::ffff:7f00:1', '127.0.0.1'],
    ['[::ffff:203.0.113.7]:443', '203.0.113.7'],
  ])('IPv4 %s → %s', (raw, key) => {
    expect(addressKey(raw)).toBe(key);
  });

  test.each([
    ['2001:db8:1:2::1', '2001:db8:1:2::/64'],
    ['2001:db8:1:2:ffff:ffff:ffff:ffff', '2001:db8:1:2::/64'],
    ['2001:0db8:0001:0002:0000:0000:0000:0001', '2001:db8:1:2::/64'],
    ['[2001:db8:1:2::1]:8443', '2001:db8:1:2::/64'],
    ['fe80::1%eth0', 'fe80:0:0:0::/64'],
    ['::1', '0:0:0:0::/64'],
    ['2001:db8::', '2001:db8:0:0::/64'],
  ])('IPv6 %s → its /64 %s', (raw, key) => {
    expect(addressKey(raw)).toBe(key);
  });

  test('one /64 is one key; the next /64 is another', () => {
    expect(addressKey('2001:db8:1:2::a')).toBe(addressKey('2001:db8:1:2:abcd::b'));
    expect(addressKey('2001:db8:1:3::a')).not.toBe(addressKey('2001:db8:1:2::a'));
  });

  test.each(['', 'unknown', '999.1.1.1', 'example.com', '1.2.3', '2001:db8::g'])('%p is not an address', (raw) => {
    expect(addressKey(raw)).toBeUndefined();
  });
});

describe('normalAddress', () => {
  test.each([
    ['203.0.113.7', '203.0.113.7'],
    ['203.0.113.7:51234', '203.0.113.7'],
    ['::ffff:203.0.113.7', '203.0.113.7'],
    ['2001:0db8:0001:0002:0000:0000:0000:0007', '2001:db8:1:2::7'],
    ['[2001:db8:1:2::7]:8443', '2001:db8:1:2::7'],
    ['fe80::1%eth0', 'fe80::1'],
  ])('%s → %s, the address itself', (raw, address) => {
    expect(normalAddress(raw)).toBe(address);
  });

  test.each(['', 'unknown', 'example.com'])('%p is not an address', (raw) => {
    expect(normalAddress(raw)).toBeUndefined();
  });
});

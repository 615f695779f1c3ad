/**
 * The variables of clients that bring themselves and of declared resources (docs/mcp.md): each
 * read, each bad value a ConfigError naming it (what a declared resource may be:
 * test/resources/resource-declaration.test.ts).
 */
import { describe, expect, test } from '@jest/globals';
import { loadConfig } from '../../src/config.js';
import { configError } from '../helpers/config-error.js';

const TOKEN = 'i'.repeat(40);

describe('standardClients', () => {
  test('every variable is read', () => {
    const resources = [
      { uri: 'http://localhost:3001/mcp', scopes: 'tools:read tools:call', name: 'Example tools' },
      { uri: 'https://api.example.com/', scopes: 'api:read', access_token_ttl: 120 },
    ];
    expect(loadConfig({
      REGISTRATION_INITIAL_ACCESS_TOKEN: TOKEN,
      REGISTRATION_CLIENT_CREDENTIALS: 'true',
      DYNAMIC_CLIENT_IDLE_DAYS: '7',
      CLIENT_METADATA_ALLOW_PRIVATE_NETWORKS: 'true',
      CLIENT_METADATA_TIMEOUT_MS: '1500',
      CLIENT_METADATA_MAX_BYTES: '2048',
      CLIENT_METADATA_CACHE_MIN_SECONDS: '0',
      CLIENT_METADATA_CACHE_MAX_SECONDS: '600',
      CLIENT_JWKS_MAX_BYTES: '4096',
      CLIENT_JWKS_REFETCH_SECONDS: '30',
      RESOURCES: JSON.stringify(resources),
    }).standardClients).toEqual({
      registrationInitialAccessToken: TOKEN,
      registrationClientCredentials: true,
      dynamicClientIdleDays: 7,
      metadataDocuments: { allowPrivateNetworks: true, timeoutMs: 1500, maxBytes: 2048, cacheMinSeconds: 0, cacheMaxSeconds: 600 },
      keySets: { maxBytes: 4096, refetchSeconds: 30 },
      resources: [
        { uri: 'http://localhost:3001/mcp', name: 'Example tools', scopes: ['tools:read', 'tools:call'], accessTokenTtl: 600 },
        { uri: 'https://api.example.com/', name: 'https://api.example.com/', scopes: ['api:read'], accessTokenTtl: 120 },
      ],
    });
  });

  test('machine clients are not self-registered unless switched on; key sets have their defaults', () => {
    const { standardClients } = loadConfig({});
    expect(standardClients.registrationClientCredentials).toBe(false);
    expect(standardClients.keySets).toEqual({ maxBytes: 65_536, refetchSeconds: 10 });
  });

  test('the result is frozen', () => {
    const { standardClients } = loadConfig({ RESOURCES: '[{"uri":"https://api.example.com","scopes":"a"}]' });
    expect(Object.isFrozen(standardClients)).toBe(true);
    expect(Object.isFrozen(standardClients.metadataDocuments)).toBe(true);
    expect(Object.isFrozen(standardClients.keySets)).toBe(true);
    expect(Object.isFrozen(standardClients.resources)).toBe(true);
  });

  test.each<[string, Record<string, string>, RegExp]>([
    ['REGISTRATION_INITIAL_ACCESS_TOKEN', { REGISTRATION_INITIAL_ACCESS_TOKEN: 'short' }, /at least 32/],
    ['REGISTRATION_INITIAL_ACCESS_TOKEN', { REGISTRATION_INITIAL_ACCESS_TOKEN: `${'x'.repeat(20)} ${'y'.repeat(20)}` }, /without spaces/],
    ['REGISTRATION_CLIENT_CREDENTIALS', { REGISTRATION_CLIENT_CREDENTIALS: 'on' }, /true or false/],
    ['CLIENT_JWKS_MAX_BYTES', { CLIENT_JWKS_MAX_BYTES: '100' }, /from 1024/],
    ['CLIENT_JWKS_REFETCH_SECONDS', { CLIENT_JWKS_REFETCH_SECONDS: '0' }, /from 1/],
    ['DYNAMIC_CLIENT_IDLE_DAYS', { DYNAMIC_CLIENT_IDLE_DAYS: '0' }, /from 1d to/],
    ['CLIENT_METADATA_ALLOW_PRIVATE_NETWORKS', { CLIENT_METADATA_ALLOW_PRIVATE_NETWORKS: 'yes' }, /true or false/],
    ['CLIENT_METADATA_TIMEOUT_MS', { CLIENT_METADATA_TIMEOUT_MS: '10' }, /from 100ms/],
    ['CLIENT_METADATA_MAX_BYTES', { CLIENT_METADATA_MAX_BYTES: 'big' }, /whole number/],
    ['CLIENT_METADATA_CACHE_MAX_SECONDS', { CLIENT_METADATA_CACHE_MIN_SECONDS: '60', CLIENT_METADATA_CACHE_MAX_SECONDS: '30' }, /not be below/],
    ['RESOURCES', { RESOURCES: 'http://x tools:read' }, /not JSON/],
    ['RESOURCES', { RESOURCES: '{"uri":"https://a.example"}' }, /must be an array/],
    ['RESOURCES', { RESOURCES: '[{"uri":"https://a.example","scopes":["a"]}]' }, /entry 0 must have a string uri and scopes/],
  ])('%s: a bad value is a ConfigError naming it', (variable, env, message) => {
    const error = configError(env);
    expect(error.variable).toBe(variable);
    expect(error.message).toMatch(message);
  });
});

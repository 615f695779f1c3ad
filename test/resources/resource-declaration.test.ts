/**
 * What a declared resource server may be (src/resources/resource-declaration.ts), held to the
 * entries of RESOURCES where the service and the commands start: a bad entry is a ConfigError
 * naming RESOURCES and the entry.
 */
import { describe, expect, test } from '@jest/globals';
import { loadConfig } from '../../src/config.js';
import { checkedResources } from '../../src/resources/resource-declaration.js';
import { startError } from '../helpers/app-start.js';
import { expectCleanFailure, runCli } from '../helpers/cli.js';
import { configErrorOf } from '../helpers/config-error.js';

const DUPLICATE = JSON.stringify([{ uri: 'https://a.example', scopes: 'a' }, { uri: 'https://a.example/', scopes: 'b' }]);

describe('checkedResources', () => {
  test('well-formed entries pass as the configuration read them', () => {
    const { resources } = loadConfig({ RESOURCES: '[{"uri":"https://a.example","scopes":"a b"},{"uri":"https://b.example/","scopes":"c","access_token_ttl":60}]' }).standardClients;
    expect(checkedResources(resources)).toBe(resources);
  });

  test.each<[string, Record<string, string>, RegExp]>([
    ['RESOURCES', { RESOURCES: '[{"uri":"https://a.example#f","scopes":"a"}]' }, /entry 0: .*fragment/],
    ['RESOURCES', { RESOURCES: '[{"uri":"https://a.example","scopes":""}]' }, /at least one scope/],
    ['RESOURCES', { RESOURCES: '[{"uri":"https://a.example","scopes":"openid"}]' }, /profile's scope/],
    ['RESOURCES', { RESOURCES: '[{"uri":"https://a.example","scopes":"a","access_token_ttl":0}]' }, /lifetime/],
    ['RESOURCES', { RESOURCES: '[{"uri":"https://a.example","scopes":"a"},{"uri":"https://a.example/","scopes":"b"}]' }, /entry 1: .*declared twice/],
  ])('%s: a bad value is a ConfigError naming it', (variable, env, message) => {
    const error = configErrorOf(() => checkedResources(loadConfig(env).standardClients.resources), `checkedResources(${JSON.stringify(env)})`);
    expect(error.variable).toBe(variable);
    expect(error.message).toMatch(message);
  });
});

describe('where RESOURCES is held to them', () => {
  test('the service does not start, naming RESOURCES, before it opens a store', async () => {
    const error = await startError({ RESOURCES: DUPLICATE, DATA_DIR: '/nonexistent/never-opened' });
    expect(error).toMatchObject({ name: 'ConfigError', variable: 'RESOURCES', message: expect.stringMatching(/entry 1: .*declared twice/) });
  });

  test('a command that opens the database refuses, naming RESOURCES', async () => {
    expectCleanFailure(await runCli(['users:list'], { RESOURCES: DUPLICATE, DATA_DIR: '/nonexistent/never-opened' }), /RESOURCES: entry 1: .*declared twice/, 1);
  });
});

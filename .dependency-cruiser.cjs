/**
 * The tiers of src/ (docs/architecture.md): a module imports only from its own tier and the
 * tiers below it, and no module depends on itself through others; nothing but src/main.ts and the
 * test helpers imports the composition root. Checked in `npm test` (test/architecture/layers.test.ts).
 *
 * @see https://github.com/sverweij/dependency-cruiser/blob/main/doc/rules-reference.md
 */

/**
 * The tiers, bottom to top, each saying what it is. A module may import from its own tier and
 * from any tier below it, never from one above; within a tier, folders may use each other as long
 * as no cycle forms (the no-cycles rule below).
 */
const TIERS = [
  { name: 'base', what: 'reading the configuration, the wire errors, the generated code, logs and metrics', parts: ['config.ts', 'config', 'errors.ts', 'generated', 'ops'] },
  { name: 'stores', what: 'PostgreSQL, Redis, PGlite and what lives in them as such: the request state, limiters, the signing keys', parts: ['store', 'keys'] },
  { name: 'domain', what: 'users, clients, resources, webhooks and mail and the worker their outboxes share, the audit trail, the service\'s own outbound requests', parts: ['accounts', 'outbound', 'audit', 'resources', 'outbox', 'webhooks', 'mail', 'clients'] },
  { name: 'surfaces', what: 'what answers a request or a command: HTTP middleware, the provider, pages, administration, the CLI', parts: ['http', 'oidc', 'ui', 'admin', 'cli', 'cli.ts'] },
  { name: 'root', what: 'the composition root and the process', parts: ['app.ts', 'main.ts', 'launch.cts'] },
];
const LAYERS = TIERS.map((tier) => tier.parts);

const escape = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** A path pattern for the folders and files of `layers`. */
const within = (layers) => `^src/(${layers.flat().map((part) => (part.includes('.') ? `${escape(part)}$` : `${escape(part)}/`)).join('|')})`;

const layerRules = LAYERS.map((layer, i) => ({
  name: `tier-${TIERS[i].name}`,
  comment: `${TIERS[i].name} (${layer.join(', ')}) may import only from its own tier${i === 0 ? '' : ` and ${TIERS.slice(0, i).map((tier) => tier.name).join(', ')}`}`,
  severity: 'error',
  from: { path: within([layer]) },
  to: { path: '^src/', pathNot: [within(LAYERS.slice(0, i + 1)), '^src/generated/'] },
}));

/** Files of one layer that are not folders (config.ts, errors.ts, …) must not import each other sideways beyond their layer either: covered above. */
module.exports = {
  forbidden: [
    ...layerRules,
    {
      name: 'no-cycles',
      comment: 'no module depends on itself through others',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'composition-root',
      comment: 'only src/main.ts and the test helpers know the composition root',
      severity: 'error',
      from: { pathNot: ['^src/main\\.ts$', '^test/helpers/'] },
      to: { path: '^src/app\\.ts$' },
    },
  ],
  options: {
    parser: 'swc',
    tsPreCompilationDeps: true,
    doNotFollow: { path: 'node_modules' },
    exclude: { path: ['^src/generated/', 'node_modules'] },
    enhancedResolveOptions: { extensions: ['.ts', '.cts', '.js', '.mjs'] },
  },
};

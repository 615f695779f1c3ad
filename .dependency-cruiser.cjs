/**
 * The layers of src/ (docs/architecture.md): a folder imports only from its own layer's folder
 * and the layers below it, so no two folders depend on each other; nothing but src/main.ts and the
 * test helpers imports the composition root. Checked in `npm test` (test/architecture/layers.test.ts).
 *
 * @see https://github.com/sverweij/dependency-cruiser/blob/main/doc/rules-reference.md
 */

/** Bottom to top. A module may import from its own folder and from any layer before it. */
const LAYERS = [
  ['config.ts', 'config', 'errors.ts', 'generated'],
  ['store'],
  ['accounts'],
  ['http'],
  ['outbound'],
  ['ops'],
  ['audit'],
  ['resources'],
  ['webhooks'],
  ['mail'],
  ['clients'],
  ['oidc'],
  ['ui'],
  ['admin'],
  ['cli', 'cli.ts'],
  ['app.ts'],
  ['main.ts', 'launch.cts'],
];

const escape = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** A path pattern for the folders and files of `layers`. */
const within = (layers) => `^src/(${layers.flat().map((part) => (part.includes('.') ? `${escape(part)}$` : `${escape(part)}/`)).join('|')})`;

const layerRules = LAYERS.map((layer, i) => ({
  name: `layer-${layer.join('+')}`,
  comment: `${layer.join(', ')} may import only from ${i === 0 ? 'nothing above it' : LAYERS.slice(0, i).flat().join(', ')} (and its own folder)`,
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

// Compiles the pages (views/*.pug; layout.pug is what they extend) into src/generated/views.ts:
// one function per page that calls pug's small runtime (pug-runtime). The service then loads
// that runtime only, never pug's compiler and its parsers (resident memory for nothing;
// "load what a mode does not use"). Run by postinstall, `npm run build` and `npm test`, so an
// edited page is what the next build or test run renders.
import fs from 'node:fs';
import path from 'node:path';
import pug from 'pug';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const dir = path.join(root, 'views');
const out = path.join(root, 'src', 'generated', 'views.ts');

const pages = fs.readdirSync(dir).filter((file) => file.endsWith('.pug') && file !== 'layout.pug').sort();
const entries = pages.map((file) => {
  const code = pug.compileFileClient(path.join(dir, file), { name: 'page', inlineRuntimeFunctions: false, compileDebug: false });
  return `  ${JSON.stringify(path.basename(file, '.pug'))}: (() => {\n${code}\nreturn page;\n})(),`;
});

const text = `// @ts-nocheck
// Generated from views/*.pug by scripts/compile-views.mjs: edit the pages, not this file.
import pug from 'pug-runtime';

/** Each page's template: locals in, HTML out. */
export const PAGES: Record<string, (locals: Record<string, unknown>) => string> = {
${entries.join('\n')}
};
`;
// Written only when it changes: an unchanged file keeps its time, so a build does not make its
// own sources look newer than its output (test/helpers/build.ts rebuilds when they do).
fs.mkdirSync(path.dirname(out), { recursive: true });
if (!fs.existsSync(out) || fs.readFileSync(out, 'utf8') !== text) fs.writeFileSync(out, text);

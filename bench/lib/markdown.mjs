/**
 * `--markdown file`: a run's header line and table written into a Markdown page between two
 * marker comments, every byte outside them kept, so the page's own text (the method) stays
 * as its authors wrote it and only the figures are the bench's. The file is checked before a
 * run starts ({@link markedFileProblem}), written once it ends ({@link writeMarked}).
 *
 * @example writeMarked('docs/performance.md', markdownBlock({ header, table, after, command, build }));
 */
import fs from 'node:fs';

export const START = '<!-- bench:table:start -->';
export const END = '<!-- bench:table:end -->';

const count = (text, marker) => text.split(marker).length - 1;

/** Why `text` cannot take a table (a marker missing, repeated, or the end before the start), or undefined. */
export function markerProblem(text) {
  for (const marker of [START, END]) {
    const found = count(text, marker);
    if (found === 0) return `has no ${marker} marker`;
    if (found > 1) return `has ${marker} ${found} times (once only)`;
  }
  if (text.indexOf(END) < text.indexOf(START)) return `has ${END} before ${START}`;
  return undefined;
}

/** `text` with what lies between the markers replaced by `block`; throws when the markers are not usable. */
export function replaceMarked(text, block) {
  const problem = markerProblem(text);
  if (problem) throw new Error(`the page ${problem}`);
  const before = text.slice(0, text.indexOf(START) + START.length);
  const after = text.slice(text.indexOf(END));
  return `${before}\n${block.trim()}\n${after}`;
}

/** Why `file` cannot take a table (unreadable, no markers), as one phrase naming it, or undefined. */
export function markedFileProblem(file) {
  if (!file) return 'needs a file';
  let text;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    const reason = { ENOENT: 'no such file', EISDIR: 'a directory', EACCES: 'permission denied' }[error.code] ?? error.message;
    return `cannot read ${file} (${reason})`;
  }
  const problem = markerProblem(text);
  return problem ? `${file} ${problem}` : undefined;
}

/** Rewrites the part of `file` between the markers with `block`. */
export function writeMarked(file, block) {
  fs.writeFileSync(file, replaceMarked(fs.readFileSync(file, 'utf8'), block));
}

/**
 * The Markdown a run writes: how it was run, its header line, its table (the printed one, as is),
 * the lines after it as a list, what the run says of each target and, for an A/B run, the
 * comparison's title and table.
 */
export function markdownBlock({ header, table, after = [], targets = [], comparison, command, build }) {
  const source = [command && `\`${command}\``, build && `build \`${build}\``].filter(Boolean).join(', ');
  return [
    ...(source ? [`Written by ${source}:`, ''] : []),
    `**${header}**`,
    '',
    table,
    '',
    ...after.map((line) => `- ${line}`),
    ...(targets.length ? ['', '**Targets, this run** ([targets](#targets)):', '', ...targets.map((line) => `- ${line}`)] : []),
    ...(comparison ? ['', `**${comparison.title}**`, '', comparison.table] : []),
  ].join('\n');
}

/** Types of bench/lib/markdown.mjs, for the TypeScript test that pins it. */
export const START: string;
export const END: string;
export function markerProblem(text: string): string | undefined;
export function replaceMarked(text: string, block: string): string;
export function markedFileProblem(file: string | undefined): string | undefined;
export function writeMarked(file: string, block: string): void;
export function markdownBlock(parts: { header: string; table: string; after?: string[]; targets?: string[]; comparison?: { title: string; table: string }; command?: string; build?: string }): string;

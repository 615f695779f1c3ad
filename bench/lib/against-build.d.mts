/** Types of bench/lib/against-build.mjs, for the TypeScript test that drives it. */
export function resolveRef(ref: string, root?: string): string | undefined;
export function describeBuild(root?: string): string | undefined;
export function buildAgainst(commit: string, options?: { root?: string; log?: (line: string) => void }): Promise<{ dir: string; remove: () => void }>;

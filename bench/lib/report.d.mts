/** Types of bench/lib/report.mjs, for the TypeScript test that pins it. */
export interface Result {
  target: string; row: string; perSecond: number; p50: number; p99: number;
  pg: number; redis: number; cpuUs: number; rssMb: number; notes: string[];
}
export interface Settings { load: string; connections: number; warmup: number; runs: number; seconds: number; quick: boolean }
export const COLUMNS: string[];
export function anchorOf(result: Result, results: Result[], argon2Rate: number): string;
export function headerLine(settings: Settings, at?: { date?: Date; cpus?: { model: string }[]; node?: string }): string;
export function resultsTable(results: Result[], argon2Rate: number, titleOf?: (row: string) => string): string;
export function startRssLines(startRss: Record<string, number>): string[];
export function targetLines(results: Result[], argon2Rate: number, settings: Pick<Settings, 'connections'>): string[];

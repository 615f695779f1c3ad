/** Types of bench/lib/stats.mjs, for the TypeScript test that pins it. */
export interface Run { perSecond: number; p50: number; p99: number }
export function median(values: number[]): number;
export function percentile(samples: number[], q: number): number;
export function ratio(value: number, anchor: number): number;
export function perRequest(before: number, after: number, requests: number): number;
export function medianRun<T extends Run>(runs: T[]): T | undefined;
export function fmt(value: number | undefined, digits?: number): string;
export function fmtRatio(value: number, unit: string): string;
export function formatTable(header: string[], rows: string[][]): string;

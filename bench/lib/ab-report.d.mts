/** Types of bench/lib/ab-report.mjs, for the TypeScript test that pins it. */
import type { Result } from './report.mjs';

/** One side's figure of one row in one round (a Result of the side's target, e.g. "this service, embedded, A"). */
export interface Figure extends Result { service: string; side: 'A' | 'B'; round: number }
export const AB_COLUMNS: string[];
export function spread(values: number[]): number;
export function verdict(aPerSecond: number[], bPerSecond: number[]): { ratio: number; noise: number; word: 'same' | 'faster' | 'slower' | '–' };
export function comparisons(figures: Figure[]): { service: string; row: string; A: Figure[]; B: Figure[] }[];
export function comparisonTable(figures: Figure[], titleOf?: (row: string) => string): string;
export function sideResults(figures: Figure[]): Result[];
export function roundNotes(rounds: { round: number; notes: string[] }[]): string[];

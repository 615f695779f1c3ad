/** Types of bench/lib/ab-plan.mjs, for the TypeScript test that pins it. */
export interface Side { id: 'A' | 'B'; name: string; env: Record<string, string>; ref?: string; commit?: string; root?: string }
export interface Plan { kind: 'against' | 'variants'; rounds: number; sides: [Side, Side] }
export interface PlanOptions { against?: string; variants?: string; rounds?: string }
export const DEFAULT_ROUNDS: number;
export function comparisonPlan(options: PlanOptions, context: { env?: Record<string, string>; resolveRef: (ref: string) => string | undefined; describe?: () => string | undefined }): Plan | undefined;
export function roundOrder(sides: Side[], round: number): Side[];
export function alternate<T extends object>(plan: Plan, rows: string[], measure: (side: Side, row: string, round: number) => Promise<T>): Promise<(T & { side: 'A' | 'B'; round: number })[]>;
export function comparisonTitle(plan: Plan): string;

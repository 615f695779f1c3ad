/** Types of bench/lib/processes.mjs, for the TypeScript tests that drive it. */
export interface DriverResult {
  requests: number; wasted: number; served: number; perSecond: number; p50: number; p99: number;
  seconds: number; statuses: Record<string, number>; errors: number; exhausted: boolean;
  /** The flows driver only: HTTP requests its flows made, and its own CPU time over the run. */
  httpRequests?: number; driverCpuUs?: number;
}
export const ROOT: string;
export function defaultLoad(): 'wrk' | 'autocannon';
export function runDriver(name: string, spec: unknown, env?: Record<string, string>): Promise<DriverResult>;

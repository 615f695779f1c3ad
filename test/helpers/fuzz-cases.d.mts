/** Types of fuzz-cases.mjs (plain JavaScript so scripts/fuzz.mjs runs it without a build). */
export interface FuzzContext {
  client?: { client_id: string; client_secret: string; redirect_uri: string };
  interaction?: { uid: string; cookie: string };
  webhookId?: string;
  /** URLs of metadata documents of every wrong shape, served locally ({@link wrongDocuments}). */
  documents?: string[];
  /** A browser's anti-forgery cookie and token: every form's `_csrf` is fuzzed with it. */
  csrf?: { cookie: string; token: string };
}

export interface DocumentRoute { status?: number; headers?: Record<string, string>; body: unknown; delayMs?: number }

export type FuzzCase =
  | { name: string; method: string; target: string; headers: [string, string][]; body?: string | Buffer; raw?: undefined }
  | { name: string; raw: Buffer; method?: undefined; target?: undefined; headers?: undefined; body?: undefined };

export interface SlowCase { name: string; pieces: string[]; stall?: boolean; gapMs?: number }

export interface FuzzResponse { status: number; headers: Record<string, string>; body: string; ms: number; timedOut: boolean }

export function rng(seed: number): { next(): number; int(n: number): number; pick<T>(list: readonly T[]): T; chance(p: number): boolean };
export function generateCases(options: { seed: number; count: number; context?: FuzzContext }): Generator<FuzzCase>;
export function csrfContext(baseUrl: string): Promise<{ cookie: string; token: string }>;
export function slowCases(path?: string): SlowCase[];
export function requestBytes(c: FuzzCase, host: string): Buffer;
export function sendCase(baseUrl: string, c: FuzzCase, options?: { timeoutMs?: number }): Promise<FuzzResponse>;
export function sendSlowCase(baseUrl: string, c: SlowCase, options?: { giveUpMs?: number }): Promise<{ status: number; body: string; ms: number; closedByServer: boolean }>;
export function problemsOf(c: FuzzCase, response: FuzzResponse, baseUrl?: string): string[];
export function wrongDocuments(origin: string): Record<string, DocumentRoute>;

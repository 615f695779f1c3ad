/** Types of system-tools.mjs (plain JavaScript so scripts/test-without-tools.mjs reads the same table). */
export interface SystemToolEntry {
  /** What it is, as a person would name it. */
  readonly tool: string;
  /** The names of its programs, hidden from PATH by a bare run. */
  readonly programs: readonly string[];
  /** The command that installs it. */
  readonly install: string;
  /** Its command or path; undefined when it is not installed. */
  find(): string | undefined;
}
export type SystemToolName = 'PROMETHEUS_PARSER' | 'CHROMIUM' | 'WRK' | 'PGBOUNCER' | 'REDIS_SENTINEL' | 'NGINX' | 'OPENSSL' | 'GIT_CHECKOUT' | 'DOCKER';
export const SYSTEM_TOOLS: Readonly<Record<SystemToolName, SystemToolEntry>>;
/** The test files (paths from the repository's root) that touch system tools: the bare pass runs them. */
export function filesTouchingTools(): string[];

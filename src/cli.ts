/**
 * The administration CLI as operators run it: `node dist/cli.js <command> [arguments]`
 * (docs/operations.md → "Administration"); the commands and exit codes are src/cli/run.ts's.
 */
import { runCli } from './cli/run.js';

function readStdin(): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    process.stdin.setEncoding('utf8').on('data', (chunk: string) => { text += chunk; }).on('end', () => resolve(text)).on('error', reject);
  });
}

process.exitCode = await runCli(process.argv.slice(2), { env: process.env, stdin: readStdin, stdout: process.stdout, stderr: process.stderr });

/**
 * A throwaway certificate authority and a server certificate for 127.0.0.1 and localhost, made
 * with Debian's `openssl` in a temporary folder, for https servers on loopback that a service
 * trusts through NODE_EXTRA_CA_CERTS (the way operators add a private CA), never through a
 * test-only switch.
 *
 * A test file that needs it calls {@link requireOpenssl} at its top: outside CI a missing
 * `openssl` skips it with one line naming the package; with CI set it fails.
 *
 * @example const tls = makeCertificates(); https.createServer({ key: tls.key, cert: tls.cert }, …); env.NODE_EXTRA_CA_CERTS = tls.caFile;
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from '@jest/globals';

export interface Certificates {
  /** The CA's certificate (PEM), the file NODE_EXTRA_CA_CERTS names. */
  readonly caFile: string;
  readonly key: string;
  readonly cert: string;
  remove(): void;
}

function hasOpenssl(): boolean {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Whether the file's tests can run; registers the CI failure (or prints the skip line) when not. */
export function requireOpenssl(file: string): boolean {
  if (hasOpenssl()) return true;
  const missing = 'openssl is missing: install Debian\'s openssl package (apt-get install openssl)';
  if (process.env.CI) test('openssl is available', () => { throw new Error(`${missing}. CI is set, so ${file} fails instead of skipping.`); });
  else console.warn(`skipping ${file}: ${missing}`);
  return false;
}

export function makeCertificates(): Certificates {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'oauth-test-tls-'));
  const at = (name: string) => path.join(dir, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl('req', '-x509', ...ec, '-keyout', at('ca.key'), '-out', at('ca.pem'), '-days', '2', '-subj', '/CN=oauth-service test CA',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign');
  openssl('req', ...ec, '-keyout', at('server.key'), '-out', at('server.csr'), '-subj', '/CN=127.0.0.1');
  fs.writeFileSync(at('server.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n');
  openssl('x509', '-req', '-in', at('server.csr'), '-CA', at('ca.pem'), '-CAkey', at('ca.key'), '-CAcreateserial', '-out', at('server.pem'), '-days', '2', '-extfile', at('server.ext'));
  return {
    caFile: at('ca.pem'),
    key: fs.readFileSync(at('server.key'), 'utf8'),
    cert: fs.readFileSync(at('server.pem'), 'utf8'),
    remove: () => fs.rmSync(dir, { recursive: true, force: true }),
  };
}

/**
 * A throwaway certificate authority and a server certificate for 127.0.0.1 and localhost, made
 * with Debian's `openssl` in a temporary folder, for https servers on loopback that a service
 * trusts through NODE_EXTRA_CA_CERTS (the way operators add a private CA), never through a
 * test-only switch.
 *
 * A test file that needs it wraps its tests in {@link describeWithOpenssl}: outside CI a missing
 * `openssl` skips them with one line naming the package; with CI set they fail.
 *
 * @example const tls = makeCertificates(); https.createServer({ key: tls.key, cert: tls.cert }, …); env.NODE_EXTRA_CA_CERTS = tls.caFile;
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describeWith, OPENSSL, program } from './system-tool.js';

export interface Certificates {
  /** The CA's certificate (PEM), the file NODE_EXTRA_CA_CERTS names. */
  readonly caFile: string;
  readonly key: string;
  readonly cert: string;
  remove(): void;
}

/** `describe` for tests that make certificates: skipped without `openssl` (failing under CI). */
export const describeWithOpenssl = describeWith(OPENSSL);

export function makeCertificates(): Certificates {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'oauth-test-tls-'));
  const at = (name: string) => path.join(dir, name);
  const command = program(OPENSSL);
  const openssl = (...args: string[]) => execFileSync(command, args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
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

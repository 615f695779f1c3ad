/**
 * A throwaway certificate authority and a server certificate for 127.0.0.1 and localhost, made
 * with Debian's `openssl` in a temporary folder (plain JavaScript, so scripts/fuzz.mjs uses it
 * without a build; tests reach it through tls.ts, which says when openssl is missing, and names
 * the program).
 *
 * @example const tls = makeCertificates('openssl'); https.createServer({ key: tls.key, cert: tls.cert }, …); env.NODE_EXTRA_CA_CERTS = tls.caFile;
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** `openssl`: the program to run (tests ask test/helpers/system-tool.ts for it, through tls.ts). */
export function makeCertificates(openssl) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'oauth-test-tls-'));
  const at = (name) => path.join(dir, name);
  const run = (...args) => execFileSync(openssl, args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  run('req', '-x509', ...ec, '-keyout', at('ca.key'), '-out', at('ca.pem'), '-days', '2', '-subj', '/CN=oauth-service test CA',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign');
  run('req', ...ec, '-keyout', at('server.key'), '-out', at('server.csr'), '-subj', '/CN=127.0.0.1');
  fs.writeFileSync(at('server.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n');
  run('x509', '-req', '-in', at('server.csr'), '-CA', at('ca.pem'), '-CAkey', at('ca.key'), '-CAcreateserial', '-out', at('server.pem'), '-days', '2', '-extfile', at('server.ext'));
  return {
    caFile: at('ca.pem'),
    key: fs.readFileSync(at('server.key'), 'utf8'),
    cert: fs.readFileSync(at('server.pem'), 'utf8'),
    remove: () => fs.rmSync(dir, { recursive: true, force: true }),
  };
}

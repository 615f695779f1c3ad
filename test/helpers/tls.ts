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
import { describeWith, OPENSSL, program } from './system-tool.js';
import { makeCertificates as makeWith } from './certificates.mjs';
import type { Certificates } from './certificates.mjs';

export type { Certificates };

/** `describe` for tests that make certificates: skipped without `openssl` (failing under CI). */
export const describeWithOpenssl = describeWith(OPENSSL);

/** A CA and a server certificate, made by the machine's openssl (inside {@link describeWithOpenssl}). */
export const makeCertificates = (): Certificates => makeWith(program(OPENSSL));

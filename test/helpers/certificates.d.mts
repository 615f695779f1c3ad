/** Types of certificates.mjs. */
export interface Certificates {
  /** The CA's certificate (PEM), the file NODE_EXTRA_CA_CERTS names. */
  readonly caFile: string;
  readonly key: string;
  readonly cert: string;
  remove(): void;
}

export function makeCertificates(openssl: string): Certificates;

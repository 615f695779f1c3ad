/**
 * An HTTP request whose fate is known when the server dies under it, for crash tests. While it
 * runs, `inFlight` says whether the whole request has reached the socket and no answer has come
 * yet: killing the server at that moment provably cuts a request the server was given. Its
 * outcome is the answer (status, and the body parsed when it is a JSON object), or none.
 *
 * @example const r = trackedPost(url, { 'content-type': 'application/json' }, '{}'); if (r.inFlight) kill(); const o = await r.outcome;
 */
import http from 'node:http';

export type Outcome<T> =
  | { answered: true; status: number; body: T }
  | { answered: false; sentWhole: boolean };

export interface TrackedRequest<T> {
  /** Sent whole, and not yet answered. */
  readonly inFlight: boolean;
  /** The whole answer has arrived. */
  readonly answered: boolean;
  /** Resolves once the whole request has reached the socket (true), or failed before it did (false). */
  readonly sent: Promise<boolean>;
  readonly outcome: Promise<Outcome<T>>;
}

/** POSTs `body` on a connection of its own (nothing shared with other requests). */
export function trackedPost<T>(url: string, headers: Record<string, string>, body: string): TrackedRequest<T> {
  let sentWhole = false;
  let settled = false;
  let answered = false;
  let onSent!: (whole: boolean) => void;
  const sent = new Promise<boolean>((resolve) => { onSent = resolve; });
  const outcome = new Promise<Outcome<T>>((resolve) => {
    const cut = () => { settled = true; onSent(sentWhole); resolve({ answered: false, sentWhole }); };
    const req = http.request(url, { method: 'POST', agent: false, headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', cut);
      res.on('aborted', cut);
      res.on('end', () => {
        if (settled) return;
        settled = true;
        answered = true;
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ answered: true, status: res.statusCode ?? 0, body: (text.startsWith('{') ? JSON.parse(text) : text) as T });
      });
    });
    req.on('finish', () => { sentWhole = true; onSent(true); });
    req.on('error', cut);
    req.end(body);
  });
  return {
    get inFlight() { return sentWhole && !settled; },
    get answered() { return answered; },
    sent,
    outcome,
  };
}

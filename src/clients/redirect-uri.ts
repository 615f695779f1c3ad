/**
 * Which redirect URIs a client may register: absolute https URIs without fragment or
 * credentials; plain http only for loopback hosts, where there is no network to snoop.
 *
 * @see RFC 6749 §3.1.2 (absolute, no fragment), RFC 8252 §7.3 (loopback), RFC 9700 §4.1
 */
/** Hosts where plain http is allowed: no network to snoop on (as URL's `hostname` spells them). */
export const LOOPBACK_HOSTS: ReadonlySet<string> = new Set(['localhost', '127.0.0.1', '[::1]']);
const MAX_LENGTH = 2000;

/** Returns why `value` is not an acceptable redirect URI, or undefined when it is. */
export function redirectUriProblem(value: string): string | undefined {
  if (value.length > MAX_LENGTH) return `redirect_uri must be at most ${MAX_LENGTH} characters`;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'redirect_uri must be an absolute URI';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'redirect_uri must use https';
  if (url.protocol === 'http:' && !LOOPBACK_HOSTS.has(url.hostname)) {
    return 'redirect_uri must use https (http is allowed only for localhost, 127.0.0.1 and [::1])';
  }
  if (value.includes('#')) return 'redirect_uri must not contain a fragment';
  if (url.username || url.password) return 'redirect_uri must not contain credentials';
  if (/\s/.test(value)) return 'redirect_uri must not contain white space';
  return undefined;
}

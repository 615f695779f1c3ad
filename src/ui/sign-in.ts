/**
 * One username + password check for every sign-in form (the login page of the flow and the
 * applications page), behind the brute-force guard: the same messages, statuses and
 * `Retry-After` wherever a user signs in. An unknown user, a wrong password and a disabled user
 * all read "Incorrect username or password." (OWASP Authentication Cheat Sheet, "Authentication
 * and Error Messages"); only the audit trail tells them apart (`login.failed`, `detail.reason`).
 *
 * @example const outcome = await signIn(ctx, { guard, users, records }, { page: 'login', clientId }, username, password);
 */
import type { Context } from 'koa';
import { setTimeout as sleep } from 'node:timers/promises';
import { deviceCookieValue, trustedDevice } from '../accounts/login-guard.js';
import type { LoginGuard } from '../accounts/login-guard.js';
import type { LoginCheck, User, UserStore } from '../accounts/user-store.js';
import { ANONYMOUS, userActor } from '../audit/audit-log.js';
import type { AuditEventName } from '../audit/audit-events.js';
import type { AuditFields } from '../audit/audit-log.js';
import type { Records } from '../audit/records.js';
import { requestContext } from '../http/audit-context.js';
import { clientKey } from '../http/client-address.js';
import { renewCsrf } from './csrf.js';

const WRONG_CREDENTIALS = 'Incorrect username or password.';

export interface SignInDependencies {
  guard: LoginGuard;
  users: Pick<UserStore, 'checkLogin' | 'findByUsername'>;
  /** Each attempt's row is written at once, whatever the request does next. */
  records: Pick<Records, 'alone'>;
}

/** Where a sign-in happens, for the audit trail: the page, and on the login page the client being authorized. */
export interface SignInPlace {
  page: 'login' | 'applications' | 'account';
  clientId?: string;
}

/** The signed-in user, or what the form should say and with which status. */
export type SignInOutcome =
  | { readonly user: User }
  | { readonly user?: undefined; readonly status: 401 | 429; readonly error: string };

/** "15 minutes", "1 hour", "30 seconds": when a blocked sign-in may try again. */
export function waitText(seconds: number): string {
  const [amount, unit] = seconds < 60 ? [seconds, 'second'] : seconds < 3600 ? [Math.ceil(seconds / 60), 'minute'] : [Math.ceil(seconds / 3600), 'hour'];
  return `${amount} ${unit}${amount === 1 ? '' : 's'}`;
}

/**
 * The browser's device cookie (accounts/login-guard.ts "Trusted browsers"): set at each sign-in,
 * naming the user; signed, so only ours count. Over https `__Host-`: no sibling subdomain sets it.
 */
const deviceCookie = (ctx: Context) => (ctx.secure ? '__Host-login_device' : 'login_device');
const DEVICE_COOKIE_DAYS = 365;

/**
 * A sign-in made in the very second its user's sessions were ended (a password just set, every
 * session just signed out) would count as ended with them: sessions keep whole seconds, and
 * accounts/provider-account.ts `sessionEnded` ends the whole second. This sign-in certainly came
 * after (it checked the password stored with the end), so it finishes in the next second instead.
 */
async function afterEndedSessions(user: User): Promise<void> {
  if (!user.sessionsEndedAt) return;
  const wait = (Math.floor(user.sessionsEndedAt.getTime() / 1000) + 1) * 1000 - Date.now();
  if (wait > 0) await sleep(wait);
}

const tooManyFailures = (seconds: number) => `Too many failed sign-in attempts. Try again in ${waitText(seconds)}.`;

/**
 * Checks the password unless the guard blocks; a block answers 429 with `Retry-After`. Each
 * attempt is audited. The typed username is kept only when it names a user: a name that names
 * nobody may be a password typed into the wrong field (docs/decisions.md).
 */
export async function signIn(ctx: Context, deps: SignInDependencies, place: SignInPlace, username: string, password: string): Promise<SignInOutcome> {
  const seen: { check?: LoginCheck } = {};
  const device = trustedDevice(ctx.cookies.get(deviceCookie(ctx), { signed: true }), username);
  const result = await deps.guard.attempt({ username, address: clientKey(ctx), device }, async () => {
    const check = seen.check = await deps.users.checkLogin(username, password);
    return check.outcome === 'accepted' ? check.user : undefined;
  });
  const { check } = seen;
  const audit = (event: AuditEventName, fields: AuditFields, actor: string) => deps.records.alone((record) => record.audit(event, fields, requestContext(ctx, actor)));
  const named = result.outcome === 'blocked' ? await deps.users.findByUsername(username) : check && 'user' in check ? check.user : undefined;
  const fields = { user: named?.id, client: place.clientId, detail: { page: place.page, ...(named ? { username: named.username } : {}) } };
  if (result.outcome === 'success') {
    await afterEndedSessions(result.value);
    await audit('login.succeeded', fields, userActor(result.value.id));
    renewCsrf(ctx); // a token from before the sign-in is worth nothing after it (ui/csrf.ts)
    ctx.cookies.set(deviceCookie(ctx), deviceCookieValue(username), {
      signed: true, httpOnly: true, sameSite: 'lax', secure: ctx.secure, path: '/', maxAge: DEVICE_COOKIE_DAYS * 24 * 3600 * 1000,
    });
    return { user: result.value };
  }
  if (result.outcome === 'blocked') {
    await audit('login.blocked', { ...fields, detail: { ...fields.detail, retry_after: result.retryAfter } }, ANONYMOUS);
    ctx.set('Retry-After', String(result.retryAfter));
    return { status: 429, error: tooManyFailures(result.retryAfter) };
  }
  await audit('login.failed', { ...fields, detail: { ...fields.detail, reason: check?.outcome } }, ANONYMOUS);
  if (result.retryAfter !== undefined) {
    ctx.set('Retry-After', String(result.retryAfter));
    return { status: 429, error: `${WRONG_CREDENTIALS} ${tooManyFailures(result.retryAfter)}` };
  }
  return { status: 401, error: WRONG_CREDENTIALS };
}

/**
 * One username + password check for every sign-in form (the login page of the flow and the
 * applications page), behind the brute-force guard: the same messages, statuses and
 * `Retry-After` wherever a user signs in.
 *
 * @example const outcome = await signIn(ctx, guard, users.authenticate, username, password);
 */
import type { Context } from 'koa';
import type { LoginGuard } from '../accounts/login-guard.js';
import type { User } from '../accounts/user-store.js';
import { clientAddress } from '../http/client-address.js';

const WRONG_CREDENTIALS = 'Incorrect username or password.';

export type Authenticate = (username: string, password: string) => Promise<User | undefined>;

/** The signed-in user, or what the form should say and with which status. */
export type SignInOutcome =
  | { readonly user: User }
  | { readonly user?: undefined; readonly status: 401 | 429; readonly error: string };

/** "15 minutes", "1 hour", "30 seconds": when a blocked sign-in may try again. */
export function waitText(seconds: number): string {
  const [amount, unit] = seconds < 60 ? [seconds, 'second'] : seconds < 3600 ? [Math.ceil(seconds / 60), 'minute'] : [Math.ceil(seconds / 3600), 'hour'];
  return `${amount} ${unit}${amount === 1 ? '' : 's'}`;
}

const tooManyFailures = (seconds: number) => `Too many failed sign-in attempts. Try again in ${waitText(seconds)}.`;

/** Checks the password unless the guard blocks; a block answers 429 with `Retry-After`. */
export async function signIn(ctx: Context, guard: LoginGuard, authenticate: Authenticate, username: string, password: string): Promise<SignInOutcome> {
  const result = await guard.attempt(username, clientAddress(ctx), () => authenticate(username, password));
  if (result.outcome === 'success') return { user: result.value };
  if (result.outcome === 'blocked') {
    ctx.set('Retry-After', String(result.retryAfter));
    return { status: 429, error: tooManyFailures(result.retryAfter) };
  }
  if (result.retryAfter !== undefined) {
    ctx.set('Retry-After', String(result.retryAfter));
    return { status: 429, error: `${WRONG_CREDENTIALS} ${tooManyFailures(result.retryAfter)}` };
  }
  return { status: 401, error: WRONG_CREDENTIALS };
}

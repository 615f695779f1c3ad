/**
 * `user:create` and `users:*`. A user is named by id or by username (any case); an argument
 * shaped like a UUID is tried as an id first.
 *
 * @example node dist/cli.js users:disable alice
 */
import type { User } from '../accounts/user-store.js';
import type { AuthorizedApp } from '../oidc/authorized-apps.js';
import { withAdmin, withUser } from './admin.js';
import { onlyArgument, parse, passwordOf, UsageError } from './args.js';
import { endedText, fields, iso, json, section, table } from './output.js';
import type { VerbTable } from './verb.js';
import { loadConfig } from '../config.js';

const JSON_OPTION = { json: { type: 'boolean' } } as const;
const PASSWORD_OPTIONS = { password: { type: 'string' }, 'password-stdin': { type: 'boolean' } } as const;

const userJson = (user: User) => ({
  id: user.id, username: user.username, email: user.email, email_verified: user.emailVerified, full_name: user.fullName, created_at: iso(user.createdAt), disabled_at: iso(user.disabledAt),
});
const status = (user: User) => (user.disabledAt ? `disabled since ${iso(user.disabledAt)}` : 'active');
const appJson = (app: AuthorizedApp) => ({ client_id: app.clientId, client_name: app.clientName, scopes: app.scopes, authorized_at: iso(app.authorizedAt) });
const named = (user: User) => `${user.username} (${user.id})`;

export const USER_VERBS: VerbTable = {
  'user:create': {
    usage: '--username <name> --email <address> --full-name <name> (--password-stdin | --password <password>) [--email-verified]',
    summary: 'create a user (mail on: a verification mail is queued, unless --email-verified vouches for the address)',
    async run(args, io) {
      const { values } = parse(args, [], { username: { type: 'string' }, email: { type: 'string' }, 'full-name': { type: 'string' }, 'email-verified': { type: 'boolean' }, ...PASSWORD_OPTIONS });
      const given: Record<string, string | undefined> = { username: values.username, password: await passwordOf(values, io.stdin), email: values.email, 'full-name': values['full-name'] };
      const missing = Object.keys(given).filter((name) => !given[name]);
      if (missing.length) throw new UsageError(`missing ${missing.map((name) => `--${name}`).join(', ')}`);
      const { mail } = loadConfig(io.env);
      const emailVerified = Boolean(values['email-verified']);
      const user = await withAdmin(io, (admin) => admin.users.create({
        username: given.username!, password: given.password!, email: given.email!, fullName: given['full-name']!,
      }, io.context, { emailVerified, ...(mail.mode === 'off' ? {} : { verificationTtlMs: mail.emailVerificationTtlMs }) }));
      return `created user ${named(user)}`;
    },
  },
  'users:list': {
    usage: '[--json]',
    summary: 'every user, by username',
    async run(args, io) {
      const { values } = parse(args, [], JSON_OPTION);
      const users = await withAdmin(io, (admin) => admin.users.list());
      if (values.json) return json(users.map(userJson));
      if (users.length === 0) return 'no users';
      return table(['ID', 'USERNAME', 'EMAIL', 'FULL NAME', 'CREATED', 'STATUS'], users.map((u) => [u.id, u.username, u.email, u.fullName, iso(u.createdAt)!, status(u)]));
    },
  },
  'users:show': {
    usage: '<user> [--json]',
    summary: 'one user and the applications they have authorized',
    async run(args, io) {
      const { values, positionals: [name] } = parse(args, ['user'], JSON_OPTION);
      const { user, apps } = await withUser(io, name!, async (admin, user) => ({ user, apps: await admin.apps.list(user.id) }));
      if (values.json) return json({ ...userJson(user), applications: apps.map(appJson) });
      const about = fields([['id', user.id], ['username', user.username], ['email', user.email], ['full name', user.fullName], ['created', iso(user.createdAt)!], ['status', status(user)]]);
      return `${about}\n${section('applications', ['CLIENT_ID', 'NAME', 'SCOPES', 'SINCE'], apps.map((a) => [a.clientId, a.clientName, a.scopes.join(' '), iso(a.authorizedAt)!]))}`;
    },
  },
  'users:disable': {
    usage: '<user>',
    summary: 'stop a user from logging in; end their sessions, grants and tokens at once',
    run: (args, io) => withUser(io, onlyArgument(args, 'user'), async (admin, user) => {
      const { changed, revoked } = await admin.users.disable(user, io.context);
      if (!changed) return `user ${user.username} is already disabled (since ${iso(user.disabledAt)})`;
      return `disabled user ${named(user)} and ended their sessions; ${endedText(revoked, (entry) => entry.clientName)}`;
    }),
  },
  'users:sign-out': {
    usage: '<user>',
    summary: 'end every session of a user: each browser signed in as them signs in again (grants and tokens stay: see tokens:revoke)',
    run: (args, io) => withUser(io, onlyArgument(args, 'user'), async (admin, user) => {
      await admin.users.signOut(user, io.context);
      return `ended every session of ${named(user)}: every browser signed in as them must sign in again`;
    }),
  },
  'users:enable': {
    usage: '<user>',
    summary: 'let a disabled user log in again',
    run: (args, io) => withUser(io, onlyArgument(args, 'user'), async (admin, user) => {
      const { changed } = await admin.users.enable(user, io.context);
      return changed ? `enabled user ${named(user)}` : `user ${user.username} is not disabled`;
    }),
  },
  'users:delete': {
    usage: '<user>',
    summary: 'delete a user, ending their grants and tokens (their audit rows stay)',
    run: (args, io) => withUser(io, onlyArgument(args, 'user'), async (admin, user) => {
      const { revoked } = await admin.users.delete(user, io.context);
      return `deleted user ${named(user)}; ${endedText(revoked, (entry) => entry.clientName)}`;
    }),
  },
  'users:set-password': {
    usage: '<user> (--password-stdin | --password <password>)',
    summary: "set a user's password and end their sessions (their grants and tokens stay: see tokens:revoke)",
    async run(args, io) {
      const { values, positionals: [name] } = parse(args, ['user'], PASSWORD_OPTIONS);
      const password = await passwordOf(values, io.stdin);
      if (!password) throw new UsageError('missing --password-stdin (or --password)');
      return withUser(io, name!, async (admin, user) => {
        await admin.users.setPassword(user, password, io.context);
        return `set the password of ${named(user)} and ended their sessions`;
      });
    },
  },
};

/**
 * Users who can log in. Usernames are case-insensitive (stored lower-case), so "Alice" and
 * "alice" cannot be two people. A disabled user (`disabledAt` set) cannot log in, and is told
 * exactly what a wrong password is told.
 *
 * @example await users.create({ username: 'alice', password, email: 'alice@example.com', fullName: 'Alice Example' });
 */
import { randomUUID } from 'node:crypto';
import type { Prisma, PrismaClient, User } from '../generated/prisma/client.js';
import { decoyHash, hashPassword, verifyPassword } from './password.js';
import { isActive } from './provider-account.js';

export type { User };

export class UserInputError extends Error {
  override name = 'UserInputError';
}

export interface NewUser {
  username: string;
  password: string;
  email: string;
  fullName: string;
}

/** A validated new user with its password hashed, ready to insert. */
export type NewUserRow = Prisma.UserCreateInput;

/** Prisma, or an open transaction of it. */
export type UserWriter = Pick<Prisma.TransactionClient, 'user'>;

/** How a sign-in fared. Every failure looks the same to the person signing in; the audit trail tells them apart. */
export type LoginCheck =
  | { readonly outcome: 'accepted'; readonly user: User }
  | { readonly outcome: 'unknown_user' }
  | { readonly outcome: 'wrong_password' | 'disabled'; readonly user: User };

export interface UserStore {
  create(input: NewUser): Promise<User>;
  /** Validates `input` and hashes its password (slow: do it before opening a transaction). */
  prepare(input: NewUser): Promise<NewUserRow>;
  /** Inserts a prepared user, in `writer`'s transaction if given; a taken username is a {@link UserInputError}. */
  insert(row: NewUserRow, writer?: UserWriter): Promise<User>;
  findById(id: string): Promise<User | null>;
  findByUsername(username: string): Promise<User | null>;
  /** Every user, by username. */
  list(): Promise<User[]>;
  /** Checks a sign-in; takes the same time whatever the outcome (an unknown user is checked against a decoy hash). */
  checkLogin(username: string, password: string): Promise<LoginCheck>;
  /** The user if the password is theirs and they are not disabled; undefined for every failure alike. */
  authenticate(username: string, password: string): Promise<User | undefined>;
  /** The argon2id hash of a new password, once its length is checked. */
  hashNewPassword(password: string): Promise<string>;
}


const USERNAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;
const EMAIL = /^[^\s@]{1,64}@[^\s@]+\.[^\s@]+$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Whether `value` can be a user id (ids are UUIDs; the `users.id` column refuses anything else). */
export const isUuid = (value: string) => UUID.test(value);

const MIN_PASSWORD = 8;
const MAX_PASSWORD = 1024;

export const normalizeUsername = (username: string) => username.trim().toLowerCase();

function validPassword(password: string): string {
  if (password.length < MIN_PASSWORD || password.length > MAX_PASSWORD) {
    throw new UserInputError(`password must be ${MIN_PASSWORD} to ${MAX_PASSWORD} characters`);
  }
  return password;
}

function validate(input: NewUser): NewUser {
  const username = normalizeUsername(input.username);
  if (!USERNAME.test(username)) {
    throw new UserInputError('username must be 1-64 characters: letters, digits, ".", "_" or "-", starting with a letter or digit');
  }
  // The administration CLI takes a user by id or by name, and tries a UUID as an id first.
  if (isUuid(username)) throw new UserInputError('username must not be shaped like a user id (a UUID)');
  validPassword(input.password);
  const email = input.email.trim();
  if (email.length > 254 || !EMAIL.test(email)) throw new UserInputError('email must be an e-mail address');
  const fullName = input.fullName.trim();
  // eslint-disable-next-line no-control-regex
  if (fullName === '' || fullName.length > 200 || /[\u0000-\u001f\u007f]/.test(fullName)) {
    throw new UserInputError('full name must be 1-200 printable characters');
  }
  return { username, password: input.password, email, fullName };
}

function isUniqueViolation(error: unknown): boolean {
  return (error as { code?: string }).code === 'P2002';
}

export function createUserStore(prisma: PrismaClient): UserStore {
  const findByUsername = (username: string) => {
    const name = normalizeUsername(username);
    return USERNAME.test(name) ? prisma.user.findUnique({ where: { username: name } }) : Promise.resolve(null);
  };
  const store: UserStore = {
    async create(input) {
      return store.insert(await store.prepare(input));
    },
    async prepare(input) {
      const user = validate(input);
      return { id: randomUUID(), username: user.username, email: user.email, fullName: user.fullName, passwordHash: await hashPassword(user.password) };
    },
    async insert(row, writer = prisma) {
      try {
        return await writer.user.create({ data: row });
      } catch (error) {
        if (isUniqueViolation(error)) throw new UserInputError(`username "${row.username}" is already taken`);
        throw error;
      }
    },
    findById(id) {
      return isUuid(id) ? prisma.user.findUnique({ where: { id } }) : Promise.resolve(null);
    },
    findByUsername,
    list: () => prisma.user.findMany({ orderBy: { username: 'asc' } }),
    async checkLogin(username, password) {
      const user = await findByUsername(username);
      const matches = await verifyPassword(user?.passwordHash ?? await decoyHash(), password.slice(0, MAX_PASSWORD)) && password.length <= MAX_PASSWORD;
      if (!user) return { outcome: 'unknown_user' };
      if (!matches) return { outcome: 'wrong_password', user };
      return isActive(user) ? { outcome: 'accepted', user } : { outcome: 'disabled', user };
    },
    async authenticate(username, password) {
      const check = await store.checkLogin(username, password);
      return check.outcome === 'accepted' ? check.user : undefined;
    },
    hashNewPassword: (password) => hashPassword(validPassword(password)),
  };
  return store;
}

/**
 * Users who can log in. Usernames are case-insensitive (stored lower-case), so "Alice" and
 * "alice" cannot be two people.
 *
 * @example await users.create({ username: 'alice', password, email: 'alice@example.com', fullName: 'Alice Example' });
 */
import { randomUUID } from 'node:crypto';
import type { PrismaClient, User } from '../generated/prisma/client.js';
import { decoyHash, hashPassword, verifyPassword } from './password.js';

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

export interface UserStore {
  create(input: NewUser): Promise<User>;
  findById(id: string): Promise<User | null>;
  /** The user if the password is theirs; undefined for an unknown user or a wrong password alike. */
  authenticate(username: string, password: string): Promise<User | undefined>;
}

const USERNAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;
const EMAIL = /^[^\s@]{1,64}@[^\s@]+\.[^\s@]+$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const MIN_PASSWORD = 8;
const MAX_PASSWORD = 1024;

export const normalizeUsername = (username: string) => username.trim().toLowerCase();

function validate(input: NewUser): NewUser {
  const username = normalizeUsername(input.username);
  if (!USERNAME.test(username)) {
    throw new UserInputError('username must be 1-64 characters: letters, digits, ".", "_" or "-", starting with a letter or digit');
  }
  if (input.password.length < MIN_PASSWORD || input.password.length > MAX_PASSWORD) {
    throw new UserInputError(`password must be ${MIN_PASSWORD} to ${MAX_PASSWORD} characters`);
  }
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
  return {
    async create(input) {
      const user = validate(input);
      try {
        return await prisma.user.create({
          data: {
            id: randomUUID(),
            username: user.username,
            email: user.email,
            fullName: user.fullName,
            passwordHash: await hashPassword(user.password),
          },
        });
      } catch (error) {
        if (isUniqueViolation(error)) throw new UserInputError(`username "${user.username}" is already taken`);
        throw error;
      }
    },
    findById(id) {
      return UUID.test(id) ? prisma.user.findUnique({ where: { id } }) : Promise.resolve(null);
    },
    async authenticate(username, password) {
      const name = normalizeUsername(username);
      const user = USERNAME.test(name) && password.length <= MAX_PASSWORD
        ? await prisma.user.findUnique({ where: { username: name } })
        : null;
      const matches = await verifyPassword(user?.passwordHash ?? await decoyHash(), password.slice(0, MAX_PASSWORD));
      return user && matches ? user : undefined;
    },
  };
}

/** An operator named a user or client that does not exist (the CLI says so and exits 1). */
export class NotFoundError extends Error {
  override name = 'NotFoundError';
}

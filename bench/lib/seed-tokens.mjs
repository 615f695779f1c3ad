/** Placeholder replaced below. */
export async function seedTokens() {
  throw new Error('--seed-tokens is not implemented yet');
}

/**
 * The ceiling of fresh logins: argon2id verifies a second with the service's parameters
 * (OWASP's minimum: 19 MiB, 2 passes, 1 lane), `concurrency` in flight, in its own process.
 * Spec (argv[2], JSON): { seconds, concurrency } → { perSecond }.
 */
import argon2 from 'argon2';

const { seconds, concurrency } = JSON.parse(process.argv[2]);
const hash = await argon2.hash('correct horse battery', { type: argon2.argon2id, memoryCost: 19_456, timeCost: 2, parallelism: 1 });
const run = async (ms) => {
  const deadline = Date.now() + ms;
  let done = 0;
  const began = Date.now();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (Date.now() < deadline) {
      if (!(await argon2.verify(hash, 'correct horse battery'))) throw new Error('verify failed');
      done += 1;
    }
  }));
  return done / ((Date.now() - began) / 1000);
};
await run(500); // warm-up
console.log(JSON.stringify({ perSecond: await run(seconds * 1000) }));

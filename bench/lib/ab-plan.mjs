/**
 * An A/B comparison inside one bench run. On a shared machine two figures are only comparable
 * when they were taken side by side, so the two sides run in the same session, on the same
 * anchors, and take turns: each row is measured over `rounds` rounds, A then B in odd rounds,
 * B then A in even ones, so a drift of the machine over the run (another job starting, the
 * stores growing) weighs on both sides alike.
 *
 * | option                | side A                       | side B                                   |
 * |-----------------------|------------------------------|------------------------------------------|
 * | `--against <git-ref>` | this checkout's build        | the ref's build, in a temporary worktree |
 * | `--variants NAME=a,b` | this build with NAME=a       | this build with NAME=b                   |
 *
 * @example const plan = comparisonPlan({ variants: 'DATABASE_BATCHING=turn,off' }, { env: {}, resolveRef });
 */

export const DEFAULT_ROUNDS = 2;
const VARIABLE = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * The comparison the options ask for: { kind, rounds, sides: [A, B] } (each side { id, name,
 * env }, and for `--against` B's `ref` and `commit`), or undefined when they ask for none.
 * Throws an Error naming the bad option; the bench prints it with its usage, exit 2.
 * `env` is the service environment both sides share (`--env`); `resolveRef(ref)` answers the
 * ref's commit, or undefined when there is no such commit; `describe()` names this checkout.
 */
export function comparisonPlan({ against, variants, rounds }, { env = {}, resolveRef, describe = () => undefined }) {
  if (against !== undefined && variants !== undefined) throw new Error('--against and --variants each name both sides: give one of them');
  if (against === undefined && variants === undefined) {
    if (rounds !== undefined) throw new Error('--rounds needs --against or --variants');
    return undefined;
  }
  const count = Number(rounds ?? DEFAULT_ROUNDS);
  if (rounds === '' || !Number.isInteger(count) || count < 1) throw new Error(`--rounds must be a whole number of at least 1, got "${rounds}"`);

  if (against !== undefined) {
    const commit = against && !against.startsWith('-') ? resolveRef(against) : undefined;
    if (!commit) throw new Error(`--against: "${against}" names no commit of this repository (a branch, tag or commit)`);
    const checkout = describe();
    return {
      kind: 'against',
      rounds: count,
      sides: [
        { id: 'A', name: checkout ? `this checkout (${checkout})` : 'this checkout', env },
        { id: 'B', name: `${against} (${commit.slice(0, 7)})`, env, ref: against, commit },
      ],
    };
  }

  const at = variants.indexOf('=');
  const name = variants.slice(0, at);
  if (at < 1 || !VARIABLE.test(name)) throw new Error(`--variants takes NAME=a,b (a variable and its two values), got "${variants}"`);
  const values = variants.slice(at + 1).split(',').map((value) => value.trim());
  if (values.length !== 2 || values.includes('')) throw new Error(`--variants takes two values, NAME=a,b, got "${variants}"`);
  if (Object.hasOwn(env, name)) throw new Error(`--variants: ${name} is also given by --env; give it in one place`);
  return {
    kind: 'variants',
    rounds: count,
    sides: values.map((value, i) => ({ id: i === 0 ? 'A' : 'B', name: `${name}=${value}`, env: { ...env, [name]: value } })),
  };
}

/** The sides in the order round `round` (from 1) measures them: A, B in odd rounds; B, A in even ones. */
export function roundOrder(sides, round) {
  return round % 2 === 1 ? [...sides] : [...sides].reverse();
}

/**
 * Every row over the plan's rounds, the sides taking turns; `measure(side, row, round)` takes one
 * figure. Resolves with the figures in the order they were taken, each with its `side` (id) and
 * `round`.
 */
export async function alternate(plan, rows, measure) {
  const figures = [];
  for (const row of rows) {
    for (let round = 1; round <= plan.rounds; round += 1) {
      for (const side of roundOrder(plan.sides, round)) figures.push({ ...(await measure(side, row, round)), side: side.id, round });
    }
  }
  return figures;
}

/** The line that says what was compared: the rounds, their order and the two sides. */
export function comparisonTitle(plan) {
  const order = plan.rounds > 1 ? 'A then B, then B then A' : 'A then B';
  const [a, b] = plan.sides;
  return `A/B in this run, ${plan.rounds} round${plan.rounds > 1 ? 's' : ''} per row (${order}): A = ${a.name}, B = ${b.name}`;
}

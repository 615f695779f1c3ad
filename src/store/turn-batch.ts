/**
 * Calls made during one turn of the event loop, answered by one call to the store (the
 * DataLoader pattern). Requests that arrive together (one turn reads every socket that has
 * data) then cost the store one round trip between them instead of one each: on a loaded
 * server, where a round trip costs more CPU than the work it carries, this is most of the gain
 * (README "Performance"). Each call still reaches the store after it was made, so what it reads
 * is as fresh as a call of its own would read.
 *
 * `load` answers one `[error, value]` pair per key, in order (as an ioredis pipeline does), so
 * one key can fail while the others are answered; a rejected `load` fails every call of its turn.
 *
 * @example const find = turnBatch((ids) => readMany(ids)); await Promise.all([find('a'), find('b')]); // one readMany
 */
export type Outcome<V> = [error: unknown, value: V];

interface Call<K, V> {
  key: K;
  resolve: (value: V) => void;
  reject: (error: unknown) => void;
}

export function turnBatch<K, V>(load: (keys: K[]) => Promise<Outcome<V>[]>): (key: K) => Promise<V> {
  let turn: Call<K, V>[] | undefined;

  function flush() {
    const calls = turn!;
    turn = undefined;
    let loaded: Promise<Outcome<V>[]>;
    try {
      loaded = load(calls.map((call) => call.key));
    } catch (error) {
      loaded = Promise.reject(error);
    }
    loaded.then((outcomes) => {
      calls.forEach((call, i) => {
        const [error, value] = outcomes[i] ?? [new Error('the store answered fewer results than it was asked for'), undefined as V];
        if (error) call.reject(error);
        else call.resolve(value);
      });
    }, (error: unknown) => { for (const call of calls) call.reject(error); });
  }

  return (key) => new Promise<V>((resolve, reject) => {
    if (!turn) {
      turn = [];
      setImmediate(flush); // after this turn's I/O callbacks: the calls of every request they started
    }
    turn.push({ key, resolve, reject });
  });
}

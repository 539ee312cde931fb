// A promise with a deadline, shared by the coordinator's etcd calls and shutdown steps and the
// shard's waits for index builds.

/**
 * `p`, or a rejection after `ms` when it has not settled by then (with `timedOut()`, or a plain
 * "timed out" error); the timer never outlives it.
 */
export function withTimeout<T>(p: Promise<T>, ms: number, timedOut: () => Error = () => new Error(`timed out after ${ms} ms`)): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(timedOut()), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

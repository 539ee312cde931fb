// A promise with a deadline, shared by the coordinator's shutdown steps and the shard's
// waits for index builds.

/** `p`, or a rejection after `ms` when it has not settled by then; the timer never outlives it. */
export function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

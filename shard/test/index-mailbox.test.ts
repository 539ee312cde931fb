import { describe, expect, it } from 'vitest';
import { IndexMailbox } from '../index-mailbox.js';
import { deferred, rejection } from './helpers.js';

const tick = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('IndexMailbox', () => {
  it('runs the tasks of one key one at a time, in arrival order, whatever their durations', async () => {
    const mailbox = new IndexMailbox();
    const order: number[] = [];
    let running = 0;
    let maxRunning = 0;
    const results = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        mailbox.run('idx', async () => {
          running++;
          maxRunning = Math.max(maxRunning, running);
          // later tasks are faster: a queue that let them overlap would reorder them
          await tick(i % 7 === 0 ? 3 : 0);
          order.push(i);
          running--;
          return i * 2;
        }),
      ),
    );
    expect(order).toEqual(Array.from({ length: 100 }, (_, i) => i));
    expect(results).toEqual(Array.from({ length: 100 }, (_, i) => i * 2));
    expect(maxRunning).toBe(1);
    expect(mailbox.activeLanes).toBe(0);
  });

  it('lets other keys proceed while one key is blocked', async () => {
    const mailbox = new IndexMailbox();
    const gate = deferred();
    const blocked = mailbox.run('slow', () => gate.promise.then(() => 'slow done'));
    const queuedBehind = mailbox.run('slow', () => 'second');
    expect(await mailbox.run('fast', () => 'fast done')).toBe('fast done');
    expect(mailbox.depth('slow')).toBe(2);
    gate.resolve();
    expect(await blocked).toBe('slow done');
    expect(await queuedBehind).toBe('second');
  });

  it('keeps going after a failed task, rejecting only that task', async () => {
    const mailbox = new IndexMailbox();
    const seen: string[] = [];
    const a = mailbox.run('k', () => {
      seen.push('a');
      return 1;
    });
    const b = mailbox.run('k', () => {
      seen.push('b');
      throw new Error('boom');
    });
    const c = mailbox.run('k', async () => {
      seen.push('c');
      return 3;
    });
    expect(await a).toBe(1);
    await expect(b).rejects.toThrow('boom');
    expect(await c).toBe(3);
    expect(seen).toEqual(['a', 'b', 'c']);
  });

  it('refuses work beyond the lane depth with unavailable', async () => {
    const mailbox = new IndexMailbox({ maxDepth: 2 });
    const gate = deferred();
    const first = mailbox.run('k', () => gate.promise);
    const second = mailbox.run('k', () => 'ok');
    const err = await rejection(mailbox.run('k', () => 'too many'));
    expect(err.code).toBe('unavailable');
    expect(await mailbox.run('other', () => 'fine')).toBe('fine');
    gate.resolve();
    await first;
    expect(await second).toBe('ok');
  });

  it('reports idle only when every lane has drained', async () => {
    const mailbox = new IndexMailbox();
    await mailbox.idle();
    const gate = deferred();
    let idle = false;
    void mailbox.run('a', () => gate.promise);
    void mailbox.run('b', () => 'quick');
    const waiting = mailbox.idle().then(() => (idle = true));
    await tick(5);
    expect(idle).toBe(false);
    gate.resolve();
    await waiting;
    expect(idle).toBe(true);
  });

  it('stays in order across many tasks (lane compaction)', async () => {
    const mailbox = new IndexMailbox({ maxDepth: 1_000_000 });
    const order: number[] = [];
    const n = 5_000;
    await Promise.all(Array.from({ length: n }, (_, i) => mailbox.run('k', () => order.push(i))));
    expect(order.length).toBe(n);
    expect(order.every((v, i) => v === i)).toBe(true);
  });
});

// A typed, promise-based handle on one RocksDB instance (npm `rocksdb`, a CommonJS binding that
// ships no type declarations). Only the calls the partition store needs are exposed; loading the
// module through createRequire keeps the untyped surface inside this file instead of declaring
// an ambient `rocksdb` module that other roles could collide with.
import { createRequire } from 'node:module';

type Callback<T = void> = (err: Error | null | undefined, value?: T) => void;

interface RawIterator {
  next(cb: (err: Error | null | undefined, key?: Buffer, value?: Buffer) => void): void;
  end(cb: (err: Error | null | undefined) => void): void;
}

interface RawDb {
  open(options: Record<string, unknown>, cb: Callback): void;
  close(cb: Callback): void;
  getMany(keys: Buffer[], options: { asBuffer: true; fillCache?: boolean }, cb: Callback<(Buffer | undefined)[]>): void;
  batch(ops: BatchOp[], options: { sync: boolean }, cb: Callback): void;
  iterator(options: Record<string, unknown>): RawIterator;
  getProperty(name: string): string;
  approximateSize(start: Buffer, end: Buffer, cb: Callback<number>): void;
}

const require = createRequire(import.meta.url);
const rocksdb = require('rocksdb') as (location: string) => RawDb;

export type BatchOp = { type: 'put'; key: Buffer; value: Buffer } | { type: 'del'; key: Buffer };

export interface RocksDbOptions {
  /** block cache per instance, bytes (binding default 8 MiB) */
  cacheBytes?: number;
  /** memtable size before a flush, bytes (binding default 4 MiB) */
  writeBufferBytes?: number;
  /** table files kept open; bounded because one process may hold dozens of partitions */
  maxOpenFiles?: number;
  readOnly?: boolean;
}

export interface IterateOptions {
  gt?: Buffer;
  gte?: Buffer;
  lt?: Buffer;
  lte?: Buffer;
  /** -1 or absent: unbounded */
  limit?: number;
  keys?: boolean;
  values?: boolean;
  /** bytes the binding reads ahead per native call */
  highWaterMark?: number;
}

export interface Entry {
  key: Buffer;
  value: Buffer;
}

const EMPTY = Buffer.alloc(0);

/** Cursor over a key range; `take` collects up to n entries per promise, not one promise per entry. */
export class RocksIterator {
  private done = false;

  constructor(private readonly raw: RawIterator) {}

  take(n: number): Promise<Entry[]> {
    const out: Entry[] = [];
    if (this.done || n <= 0) return Promise.resolve(out);
    return new Promise((resolve, reject) => {
      const step = (err: Error | null | undefined, key?: Buffer, value?: Buffer): void => {
        if (err) return reject(err);
        if (key === undefined && value === undefined) {
          this.done = true;
          return resolve(out);
        }
        out.push({ key: key ?? EMPTY, value: value ?? EMPTY });
        if (out.length >= n) return resolve(out);
        this.raw.next(step);
      };
      this.raw.next(step);
    });
  }

  get exhausted(): boolean {
    return this.done;
  }

  end(): Promise<void> {
    return new Promise((resolve, reject) => this.raw.end((err) => (err ? reject(err) : resolve())));
  }
}

export class RocksDb {
  private constructor(
    readonly location: string,
    private readonly raw: RawDb,
  ) {}

  static open(location: string, options: RocksDbOptions = {}): Promise<RocksDb> {
    const raw = rocksdb(location);
    const opts: Record<string, unknown> = {
      createIfMissing: !options.readOnly,
      readOnly: options.readOnly ?? false,
      compression: true,
      cacheSize: options.cacheBytes ?? 8 << 20,
      writeBufferSize: options.writeBufferBytes ?? 8 << 20,
      maxOpenFiles: options.maxOpenFiles ?? 256,
      // RocksDB's own LOG file: warnings are worth keeping, per-flush chatter is not
      infoLogLevel: 'warn',
    };
    return new Promise((resolve, reject) => raw.open(opts, (err) => (err ? reject(err) : resolve(new RocksDb(location, raw)))));
  }

  getMany(keys: Buffer[]): Promise<(Buffer | undefined)[]> {
    if (keys.length === 0) return Promise.resolve([]);
    return new Promise((resolve, reject) =>
      this.raw.getMany(keys, { asBuffer: true }, (err, values) => (err ? reject(err) : resolve(values ?? []))),
    );
  }

  async get(key: Buffer): Promise<Buffer | undefined> {
    // getMany reports a missing key as undefined instead of building a NotFound error
    return (await this.getMany([key]))[0];
  }

  /** One atomic write batch; `sync` waits for the WAL to reach the disk before resolving. */
  write(ops: BatchOp[], sync: boolean): Promise<void> {
    if (ops.length === 0) return Promise.resolve();
    return new Promise((resolve, reject) => this.raw.batch(ops, { sync }, (err) => (err ? reject(err) : resolve())));
  }

  iterate(options: IterateOptions): RocksIterator {
    const opts: Record<string, unknown> = {
      keys: options.keys ?? true,
      values: options.values ?? true,
      keyAsBuffer: true,
      valueAsBuffer: true,
      limit: options.limit ?? -1,
      highWaterMark: options.highWaterMark ?? 64 * 1024,
    };
    if (options.gt) opts.gt = options.gt;
    if (options.gte) opts.gte = options.gte;
    if (options.lt) opts.lt = options.lt;
    if (options.lte) opts.lte = options.lte;
    return new RocksIterator(this.raw.iterator(opts));
  }

  /** Estimated on-disk bytes of a key range (SST files only; the memtable is not counted). */
  approximateSize(start: Buffer, end: Buffer): Promise<number> {
    return new Promise((resolve, reject) => this.raw.approximateSize(start, end, (err, n) => (err ? reject(err) : resolve(n ?? 0))));
  }

  property(name: string): string | undefined {
    try {
      return this.raw.getProperty(name);
    } catch {
      return undefined;
    }
  }

  close(): Promise<void> {
    return new Promise((resolve, reject) => this.raw.close((err) => (err ? reject(err) : resolve())));
  }
}

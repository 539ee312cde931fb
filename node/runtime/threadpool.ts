// RocksDB and file I/O run on libuv's thread pool (4 threads by default), which a busy shard
// node saturates. The size is read when the pool first starts, so this module is imported
// first by the process entry, before anything touches the disk.
process.env.UV_THREADPOOL_SIZE ??= '16';
export {};

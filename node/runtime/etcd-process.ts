// Starts a real single-member etcd (the Debian `etcd-server` binary) on free loopback ports for
// tests and the local cluster launcher, and owns its lifetime: data dir, output, shutdown.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

export interface EtcdProcess {
  /** client URLs, e.g. `http://127.0.0.1:40123` */
  readonly endpoints: string[];
  readonly dataDir: string;
  /** SIGKILL (a crash) and wait for exit; data and ports are kept so `restart` can resume */
  kill(): Promise<void>;
  /** start again on the same ports and data dir (after `kill`) */
  restart(): Promise<void>;
  /** SIGSTOP: etcd stops answering without closing its connections (as behind a network cut) */
  pause(): void;
  /** SIGCONT after `pause` */
  resume(): void;
  /** stop it and remove the data dir (unless the caller supplied the dir) */
  stop(): Promise<void>;
}

export interface EtcdOptions {
  /** binary to run; default `SUGGEST_ETCD_BIN` or `etcd` on PATH */
  binary?: string;
  /** keep data here (not removed on stop); default a fresh temp dir that stop removes */
  dataDir?: string;
  /** how long to wait for the server to answer /health */
  timeoutMs?: number;
  /** echo etcd's output to this process's stderr */
  echo?: boolean;
}

/** Bind port 0, read the port the kernel chose, release it. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => (port > 0 ? resolve(port) : reject(new Error('no port assigned'))));
    });
  });
}

async function twoFreePorts(): Promise<[number, number]> {
  for (;;) {
    const a = await freePort();
    const b = await freePort();
    if (a !== b) return [a, b];
  }
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

async function healthy(clientUrl: string): Promise<boolean> {
  try {
    const res = await fetch(`${clientUrl}/health`, { signal: AbortSignal.timeout(1_000) });
    if (!res.ok) return false;
    const body = (await res.json()) as { health?: string };
    return body.health === 'true';
  } catch {
    return false;
  }
}

interface Running {
  child: ChildProcess;
  exited: Promise<void>;
  output: string[];
}

function launch(binary: string, name: string, dataDir: string, clientPort: number, peerPort: number, echo: boolean): Running {
  const client = `http://127.0.0.1:${clientPort}`;
  const peer = `http://127.0.0.1:${peerPort}`;
  const args = [
    '--name', name,
    '--data-dir', dataDir,
    '--listen-client-urls', client,
    '--advertise-client-urls', client,
    '--listen-peer-urls', peer,
    '--initial-advertise-peer-urls', peer,
    '--initial-cluster', `${name}=${peer}`,
    '--initial-cluster-state', 'new',
    // one member: short raft timers make startup and lease expiry fast (etcd's minimum lease TTL
    // is 1.5 election timeouts, so 1-second leases really last about a second)
    '--heartbeat-interval', '50',
    '--election-timeout', '500',
    '--logger', 'zap',
    '--log-outputs', 'stderr',
    '--log-level', echo ? 'info' : 'warn',
  ];
  const child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const output: string[] = [];
  // both pipes must be drained or etcd blocks once the pipe buffer fills
  const remember = (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n')) {
      if (!line) continue;
      output.push(line);
      if (output.length > 100) output.shift();
      if (echo) process.stderr.write(`[etcd] ${line}\n`);
    }
  };
  child.stdout?.on('data', remember);
  child.stderr?.on('data', remember);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.once('error', (err) => output.push(`spawn failed: ${err.message}`));
  return { child, exited, output };
}

const alive = (r: Running) => r.child.exitCode === null && r.child.signalCode === null;

async function waitReady(r: Running, clientUrl: string, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!alive(r)) return false;
    if (await healthy(clientUrl)) return true;
    await sleep(50);
  }
  return false;
}

async function terminate(r: Running, signal: NodeJS.Signals): Promise<void> {
  if (!alive(r)) return;
  r.child.kill(signal);
  const timer = setTimeout(() => r.child.kill('SIGKILL'), 5_000);
  await r.exited;
  clearTimeout(timer);
}

/** Starts etcd on two free loopback ports; retries with new ports if one was taken meanwhile. */
export async function startEtcd(opts: EtcdOptions = {}): Promise<EtcdProcess> {
  const binary = opts.binary ?? process.env.SUGGEST_ETCD_BIN ?? 'etcd';
  const ownDir = opts.dataDir === undefined;
  const dataDir = opts.dataDir ?? mkdtempSync(path.join(os.tmpdir(), 'suggest-etcd-'));
  const timeoutMs = opts.timeoutMs ?? 20_000;
  const echo = opts.echo ?? false;
  const name = 'suggest-etcd';

  let running: Running | undefined;
  let ports: [number, number] | undefined;
  let lastOutput: string[] = [];
  // a port picked here can be taken by someone else before etcd binds it: then etcd exits and
  // we try again with fresh ports
  for (let attempt = 0; attempt < 5 && !running; attempt++) {
    const [clientPort, peerPort] = await twoFreePorts();
    const r = launch(binary, name, dataDir, clientPort, peerPort, echo);
    if (await waitReady(r, `http://127.0.0.1:${clientPort}`, timeoutMs)) {
      running = r;
      ports = [clientPort, peerPort];
    } else {
      lastOutput = r.output;
      await terminate(r, 'SIGKILL');
      if (ownDir) {
        // a half-initialised member dir would pin the old peer URL
        rmSync(path.join(dataDir, 'member'), { recursive: true, force: true });
      }
    }
  }
  if (!running || !ports) {
    if (ownDir) rmSync(dataDir, { recursive: true, force: true });
    throw new Error(`etcd (${binary}) did not start:\n${lastOutput.join('\n')}`);
  }
  const [clientPort, peerPort] = ports;
  const endpoint = `http://127.0.0.1:${clientPort}`;

  // never leave an etcd behind when the test process exits without calling stop()
  const onExit = () => {
    if (running && alive(running)) running.child.kill('SIGKILL');
  };
  process.on('exit', onExit);

  let current: Running = running;
  return {
    endpoints: [endpoint],
    dataDir,
    async kill() {
      await terminate(current, 'SIGKILL');
    },
    pause() {
      current.child.kill('SIGSTOP');
    },
    resume() {
      current.child.kill('SIGCONT');
    },
    async restart() {
      await terminate(current, 'SIGKILL');
      // the old listener may linger a moment after the kill
      for (let attempt = 0; attempt < 20; attempt++) {
        const r = launch(binary, name, dataDir, clientPort, peerPort, echo);
        running = r;
        current = r;
        if (await waitReady(r, endpoint, timeoutMs)) return;
        await terminate(r, 'SIGKILL');
        await sleep(100);
      }
      throw new Error(`etcd did not restart on ${endpoint}:\n${current.output.join('\n')}`);
    },
    async stop() {
      await terminate(current, 'SIGTERM');
      process.off('exit', onExit);
      if (ownDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

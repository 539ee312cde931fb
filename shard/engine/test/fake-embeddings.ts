// A local HTTP server speaking the OpenAI embeddings protocol (POST /v1/embeddings), with
// switchable misbehaviours, for the tests of the embeddings client and of fts_rerank through it.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeEmbeddings {
  url: string;
  requests: { path: string; auth: string | undefined; body: { model: string; input: string[]; dimensions?: number } }[];
  behaviour: 'ok' | 'slow' | 'error' | 'not-json' | 'short' | 'wrong-dims' | 'reversed';
  embed: (text: string) => number[];
  close(): Promise<void>;
}

/** A local server speaking the OpenAI embeddings protocol; `embed` decides the vectors. */
export async function startFakeEmbeddings(embed: (text: string) => number[]): Promise<FakeEmbeddings> {
  const fake: Partial<FakeEmbeddings> & { server?: Server } = { requests: [], behaviour: 'ok', embed };
  const read = (req: IncomingMessage) =>
    new Promise<string>((resolve) => {
      let s = '';
      req.on('data', (c: Buffer) => (s += c.toString()));
      req.on('end', () => resolve(s));
    });
  const server = createServer(async (req, res) => {
    const body = JSON.parse(await read(req)) as { model: string; input: string[]; dimensions?: number };
    fake.requests!.push({ path: req.url ?? '', auth: req.headers.authorization, body });
    if (req.url !== '/v1/embeddings' || req.method !== 'POST') {
      res.writeHead(404).end('{"error":"not found"}');
      return;
    }
    const b = fake.behaviour;
    if (b === 'slow') await new Promise((r) => setTimeout(r, 400));
    if (b === 'error') return void res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":{"message":"model overloaded"}}');
    if (b === 'not-json') return void res.writeHead(200).end('<html>');
    let data = body.input.map((t, index) => ({ object: 'embedding', index, embedding: fake.embed!(t) }));
    if (b === 'short') data = data.slice(1);
    if (b === 'wrong-dims') data = data.map((d) => ({ ...d, embedding: [...d.embedding, 1] }));
    if (b === 'reversed') data = data.reverse();
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', model: body.model, data }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  fake.close = () => new Promise((r) => server.close(() => r()));
  return fake as FakeEmbeddings;
}


// Documents read out of shared memory must not keep it alive: msgpackr holds a view of the last
// buffer it read, and a segment's arena of a 100k-document engine is about 190 MB.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { decodeDocument, encodeDocument, releaseDecoderSource } from '../document.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** A document decoded from inside a shared buffer; the buffer itself is only weakly held here. */
function decodeFromShared(): WeakRef<SharedArrayBuffer> {
  const body = encodeDocument({ id: 'd1', title: 'Wombat Kettle', desc: '', manufacturer: 'Wombat', raw: { color: 'red' } });
  const shared = new SharedArrayBuffer(1 << 20);
  const view = new Uint8Array(shared, 4096, body.length);
  view.set(body);
  expect(decodeDocument(view).title).toBe('Wombat Kettle');
  return new WeakRef(shared);
}

async function collected(ref: WeakRef<object>): Promise<boolean> {
  for (let i = 0; i < 5; i++) {
    await new Promise((r) => setTimeout(r, 0));
    gc();
  }
  return ref.deref() === undefined;
}

describe('releaseDecoderSource', () => {
  it('lets the shared memory a document was read from go', async () => {
    const ref = decodeFromShared();
    releaseDecoderSource();
    expect(await collected(ref)).toBe(true);
  });

  it('is what lets it go: without it the decoder keeps a view of the last buffer', async () => {
    const ref = decodeFromShared();
    expect(await collected(ref)).toBe(false);
    releaseDecoderSource();
    expect(await collected(ref)).toBe(true);
  });
});

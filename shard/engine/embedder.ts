// The seam for vector modes: an embedding interface and the built-in embedder that needs no
// model download. HashedNgramEmbedder hashes character trigrams of each word (with word
// boundaries) and the words themselves into a fixed number of signed buckets and L2-normalizes,
// so texts that share words or spelling fragments ("iphone" / "iphne") land close together.
// An OpenAI-compatible HTTP embedder and learned refinements plug in behind the same interface;
// the vector indexes (usearch, hnswlib) will consume it.
import { fnv1aUnits } from '../../node/runtime/hash.js';
import { tokenize } from '../../node/runtime/text/tokenize.js';

export interface Embedder {
  /** stable name, recorded with stored vectors so a changed embedder forces a rebuild */
  readonly name: string;
  readonly dimensions: number;
  /** every vector it returns has length 1 (or 0), so a dot product is a cosine in [-1, 1] */
  readonly unitVectors?: boolean;
  embed(texts: readonly string[]): Float32Array[];
  /**
   * A query's vector, when it is embedded differently from documents: with `lastIsPrefix` the
   * last word is still being typed, so only what is typed of it counts.
   */
  embedQuery?(text: string, lastIsPrefix: boolean): Float32Array;
}

export interface HashedNgramOptions {
  /** default 256 */
  dimensions?: number;
  /** weight of whole words relative to trigrams (default 2) */
  wordWeight?: number;
}

export class HashedNgramEmbedder implements Embedder {
  readonly name: string;
  readonly dimensions: number;
  readonly unitVectors = true;
  private readonly wordWeight: number;

  constructor(options: HashedNgramOptions = {}) {
    this.dimensions = options.dimensions ?? 256;
    this.wordWeight = options.wordWeight ?? 2;
    this.name = `hashed-ngram-v1-${this.dimensions}`;
  }

  embed(texts: readonly string[]): Float32Array[] {
    return texts.map((t) => this.embedOne(t, false));
  }

  /** A word being typed contributes its trigrams so far: no whole-word feature, no end mark. */
  embedQuery(text: string, lastIsPrefix: boolean): Float32Array {
    return this.embedOne(text, lastIsPrefix);
  }

  private embedOne(text: string, lastIsPrefix: boolean): Float32Array {
    const v = new Float32Array(this.dimensions);
    const toks = tokenize(text, { variants: false });
    toks.forEach((tok, i) => {
      const w = tok.term;
      const partial = lastIsPrefix && i === toks.length - 1;
      if (!partial) this.add(v, `w:${w}`, this.wordWeight);
      const padded = partial ? `^${w}` : `^${w}$`;
      for (let j = 0; j + 3 <= padded.length; j++) this.add(v, padded.slice(j, j + 3), 1);
    });
    let norm = 0;
    for (let i = 0; i < v.length; i++) norm += (v[i] as number) * (v[i] as number);
    if (norm > 0) {
      const inv = 1 / Math.sqrt(norm);
      for (let i = 0; i < v.length; i++) v[i] = (v[i] as number) * inv;
    }
    return v;
  }

  /** Signed feature hashing: the sign bit keeps collisions from piling up in one direction. */
  private add(v: Float32Array, feature: string, weight: number): void {
    const h = fnv1aUnits(feature);
    const slot = h % this.dimensions;
    v[slot] = (v[slot] as number) + ((h & 0x80000000) !== 0 ? -weight : weight);
  }
}

/** Cosine similarity of two L2-normalized vectors (their dot product). */
export function cosine(a: Float32Array, b: Float32Array): number {
  let s = 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) s += (a[i] as number) * (b[i] as number);
  return s;
}

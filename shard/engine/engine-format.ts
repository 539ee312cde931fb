// The on-disk form of an engine's segments, so a restart loads typed arrays instead of
// re-tokenizing the corpus. Layout (little endian):
//
//   "SGEN" | u32 format version | u32 header length | header (JSON, UTF-8) | pad to 8 |
//   per segment: arena bytes | tombstones (u8 per doc) | deleted suggestion weights (f32) | pad
//
// The header lists each segment's metadata, arena layout and byte offsets. Readers accept the
// versions from OLDEST_READABLE_VERSION to ENGINE_FORMAT_VERSION; any other is refused with an
// error saying to rebuild from the documents (a snapshot is a cache of them).
//
// Versions: 1 (UTF-16 titles and suggestion displays, no term top lists); 2 (UTF-8 titles and
// displays, stored documents without their title, term top lists, shared deleted counter);
// 3 (per-document f32 vectors `vec.f32` and the embedder's name in the segment metadata).
import { Segment, type SegmentMeta } from './segment.js';
import { Arena, allocateShared, type ArenaLayout } from './arena.js';

export const ENGINE_FORMAT_VERSION = 3;
export const OLDEST_READABLE_VERSION = 3;
const MAGIC = 0x4e454753; // "SGEN" read as little-endian u32

interface SegmentEntry {
  meta: SegmentMeta;
  layout: ArenaLayout;
  arenaOffset: number;
  tombstonesOffset: number;
  deletedWeightsOffset: number;
  deletedWeightsLength: number;
  deletedCount: number;
}

interface Header {
  version: number;
  options: Record<string, unknown>;
  segments: SegmentEntry[];
}

export interface DecodedEngine {
  version: number;
  options: Record<string, unknown>;
  segments: Segment[];
}

function pad8(n: number): number {
  return Math.ceil(n / 8) * 8;
}

export function encodeSegments(segments: readonly Segment[], options: Record<string, unknown>): Uint8Array {
  // offsets are relative to the start of the data area (after the padded header)
  let at = 0;
  const entries: SegmentEntry[] = segments.map((s) => {
    const arenaOffset = at;
    at = pad8(at + s.arena.layout.byteLength);
    const tombstonesOffset = at;
    at = pad8(at + s.tombstones.byteLength);
    const deletedWeightsOffset = at;
    at = pad8(at + s.deletedWeights.byteLength);
    return {
      meta: s.meta,
      layout: s.arena.layout,
      arenaOffset,
      tombstonesOffset,
      deletedWeightsOffset,
      deletedWeightsLength: s.deletedWeights.length,
      deletedCount: s.deletedCount,
    };
  });
  const header: Header = { version: ENGINE_FORMAT_VERSION, options, segments: entries };
  const json = new TextEncoder().encode(JSON.stringify(header));
  const dataStart = pad8(12 + json.length);
  const out = new Uint8Array(dataStart + at);
  const view = new DataView(out.buffer);
  view.setUint32(0, MAGIC, true);
  view.setUint32(4, ENGINE_FORMAT_VERSION, true);
  view.setUint32(8, json.length, true);
  out.set(json, 12);
  segments.forEach((s, i) => {
    const e = entries[i] as SegmentEntry;
    out.set(new Uint8Array(s.arena.buffer as ArrayBuffer, 0, s.arena.layout.byteLength), dataStart + e.arenaOffset);
    out.set(s.tombstones, dataStart + e.tombstonesOffset);
    out.set(new Uint8Array(s.deletedWeights.buffer as ArrayBuffer, s.deletedWeights.byteOffset, s.deletedWeights.byteLength), dataStart + e.deletedWeightsOffset);
  });
  return out;
}

export function decodeSegments(bytes: Uint8Array): DecodedEngine {
  if (bytes.length < 12) throw new Error('engine snapshot is truncated');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (view.getUint32(0, true) !== MAGIC) throw new Error('not an engine snapshot (bad magic)');
  const version = view.getUint32(4, true);
  if (version > ENGINE_FORMAT_VERSION) throw new Error(`engine snapshot format ${version} is newer than this build reads (${ENGINE_FORMAT_VERSION}); rebuild the index from its documents`);
  if (version < OLDEST_READABLE_VERSION) throw new Error(`engine snapshot format ${version} is older than this build reads (${OLDEST_READABLE_VERSION}); rebuild the index from its documents`);
  const len = view.getUint32(8, true);
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(12, 12 + len))) as Header;
  const dataStart = pad8(12 + len);
  const segments = header.segments.map((e) => {
    const arenaBytes = bytes.subarray(dataStart + e.arenaOffset, dataStart + e.arenaOffset + e.layout.byteLength);
    const arena = Arena.fromBytes(arenaBytes, e.layout);
    const tombstones = new Uint8Array(allocateShared(e.meta.docCount));
    tombstones.set(bytes.subarray(dataStart + e.tombstonesOffset, dataStart + e.tombstonesOffset + e.meta.docCount));
    const deletedWeights = new Float32Array(allocateShared(e.deletedWeightsLength * 4));
    new Uint8Array(deletedWeights.buffer as ArrayBuffer).set(bytes.subarray(dataStart + e.deletedWeightsOffset, dataStart + e.deletedWeightsOffset + e.deletedWeightsLength * 4));
    const counters = new Int32Array(allocateShared(4));
    counters[0] = e.deletedCount;
    return new Segment(arena, e.meta, { tombstones, deletedWeights, counters });
  });
  return { version, options: header.options, segments };
}

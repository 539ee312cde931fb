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
// 3 (per-document f32 vectors `vec.f32` and the embedder's name in the segment metadata); 4 (the
// layout of 3; its terms carry a number and its unit joined, "5 kg" -> "5kg", and its phrases
// their displays: a snapshot of 3 lacks them, and is rebuilt from the documents); 5 (the layout
// of 4; a mixed number is one term, "1-1/2" and "1 1/2" -> "1-1/2", where 4 has two); 6 (the
// layout of 5; invisible format characters are removed, "sam\u00adsung" -> "samsung", where 5
// splits the word at them); 7 (the layout of 6; a zero-width non-joiner joins the parts of a
// word, "می\u200cخواهم" -> "میخواهم" with parts, where 6 splits the word at it); 8 (the layout of 7;
// Arabic-script letters typed in several forms are read as one, Arabic and Hebrew vowel marks
// dropped, and the decimal digits of every script read as ASCII digits, "٧٩٩" -> "799"); 9 (the
// layout of 8; a pictograph (emoji) is a word of its own, where 8 leaves it out).
import type { FileHandle } from 'node:fs/promises';
import { Segment, type SegmentMeta } from './segment.js';
import { Arena, allocateShared, type ArenaLayout } from './arena.js';

export const ENGINE_FORMAT_VERSION = 9;
export const OLDEST_READABLE_VERSION = 9;
/**
 * Formats from this one on have this build's layout and an older reading of text (see the
 * versions above): a reader that asks for it reads such a snapshot as an interim engine, to serve
 * while the part is built again from its documents (SearchHost), and never writes it back.
 */
export const INTERIM_READABLE_VERSION = 4;
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

/**
 * The snapshot as byte ranges to write in order: the arenas (immutable once built) as views of the
 * segments' own memory, no copies; the mutable per-segment state (tombstones, deleted weights)
 * copied, so that a write which outlives later deletes still holds one consistent state.
 * `encodeSegments` joins them; an asynchronous writer hands them to the file as they are.
 */
export function encodeSegmentPieces(segments: readonly Segment[], options: Record<string, unknown>): Uint8Array[] {
  // offsets are relative to the start of the data area (after the padded header)
  let at = 0;
  const pieces: Uint8Array[] = [];
  const padTo = (n: number) => {
    const padded = pad8(n);
    if (padded > n) pieces.push(new Uint8Array(padded - n));
    return padded;
  };
  const entries: SegmentEntry[] = segments.map((s) => {
    const arenaOffset = at;
    pieces.push(new Uint8Array(s.arena.buffer as ArrayBuffer, 0, s.arena.layout.byteLength));
    at = padTo(at + s.arena.layout.byteLength);
    const tombstonesOffset = at;
    pieces.push(s.tombstones.slice());
    at = padTo(at + s.tombstones.byteLength);
    const deletedWeightsOffset = at;
    pieces.push(new Uint8Array(s.deletedWeights.buffer as ArrayBuffer, s.deletedWeights.byteOffset, s.deletedWeights.byteLength).slice());
    at = padTo(at + s.deletedWeights.byteLength);
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
  const head = new Uint8Array(pad8(PREAMBLE + json.length));
  const view = new DataView(head.buffer);
  view.setUint32(0, MAGIC, true);
  view.setUint32(4, ENGINE_FORMAT_VERSION, true);
  view.setUint32(8, json.length, true);
  head.set(json, PREAMBLE);
  return [head, ...pieces];
}

export function encodeSegments(segments: readonly Segment[], options: Record<string, unknown>): Uint8Array {
  const pieces = encodeSegmentPieces(segments, options);
  const out = new Uint8Array(pieces.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of pieces) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

/** A snapshot written in a format this build does not read: expected after an upgrade. */
export class SnapshotFormatError extends Error {
  constructor(readonly version: number) {
    const side = version > ENGINE_FORMAT_VERSION ? 'newer' : 'older';
    super(`engine snapshot format ${version} is ${side} than this build reads (${OLDEST_READABLE_VERSION}-${ENGINE_FORMAT_VERSION}); rebuild the index from its documents`);
  }
}

/** magic, format version, header length */
const PREAMBLE = 12;

/**
 * The header's length, after checking the magic and the version (`view`: the first PREAMBLE
 * bytes) against `oldest` (OLDEST_READABLE_VERSION, or INTERIM_READABLE_VERSION for an interim
 * engine).
 */
function checkPreamble(view: DataView, oldest: number): number {
  if (view.getUint32(0, true) !== MAGIC) throw new Error('not an engine snapshot (bad magic)');
  const version = view.getUint32(4, true);
  if (version > ENGINE_FORMAT_VERSION || version < Math.max(oldest, INTERIM_READABLE_VERSION)) throw new SnapshotFormatError(version);
  return view.getUint32(8, true);
}

function segmentOf(e: SegmentEntry, arena: Arena, tombstones: Uint8Array, deletedWeights: Float32Array): Segment {
  const counters = new Int32Array(allocateShared(4));
  counters[0] = e.deletedCount;
  return new Segment(arena, e.meta, { tombstones, deletedWeights, counters });
}

/**
 * Reads a snapshot from `file` starting at byte `offset`, straight into fresh shared memory:
 * the reads run off the event loop, which only parses the header (no copy of the arenas, unlike
 * `decodeSegments` over a file read whole).
 */
export async function readSegments(file: FileHandle, offset: number, oldest = OLDEST_READABLE_VERSION): Promise<DecodedEngine> {
  const preamble = new Uint8Array(PREAMBLE);
  await readFully(file, preamble, offset);
  const view = new DataView(preamble.buffer);
  const len = checkPreamble(view, oldest);
  const json = new Uint8Array(len);
  await readFully(file, json, offset + PREAMBLE);
  const header = JSON.parse(new TextDecoder().decode(json)) as Header;
  const dataStart = offset + pad8(PREAMBLE + len);
  const segments: Segment[] = [];
  for (const e of header.segments) {
    const buffer = allocateShared(e.layout.byteLength);
    await readFully(file, new Uint8Array(buffer), dataStart + e.arenaOffset);
    const tombstones = new Uint8Array(allocateShared(e.meta.docCount));
    await readFully(file, tombstones, dataStart + e.tombstonesOffset);
    const deletedWeights = new Float32Array(allocateShared(e.deletedWeightsLength * 4));
    await readFully(file, new Uint8Array(deletedWeights.buffer as ArrayBuffer), dataStart + e.deletedWeightsOffset);
    segments.push(segmentOf(e, new Arena(buffer, e.layout), tombstones, deletedWeights));
  }
  return { version: view.getUint32(4, true), options: header.options, segments };
}

async function readFully(file: FileHandle, into: Uint8Array, position: number): Promise<void> {
  let done = 0;
  while (done < into.byteLength) {
    const { bytesRead } = await file.read(into, done, into.byteLength - done, position + done);
    if (bytesRead === 0) throw new Error('engine snapshot is truncated');
    done += bytesRead;
  }
}

export function decodeSegments(bytes: Uint8Array, oldest = OLDEST_READABLE_VERSION): DecodedEngine {
  if (bytes.length < PREAMBLE) throw new Error('engine snapshot is truncated');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const len = checkPreamble(view, oldest);
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(PREAMBLE, PREAMBLE + len))) as Header;
  const dataStart = pad8(PREAMBLE + len);
  const segments = header.segments.map((e) => {
    const arenaBytes = bytes.subarray(dataStart + e.arenaOffset, dataStart + e.arenaOffset + e.layout.byteLength);
    const arena = Arena.fromBytes(arenaBytes, e.layout);
    const tombstones = new Uint8Array(allocateShared(e.meta.docCount));
    tombstones.set(bytes.subarray(dataStart + e.tombstonesOffset, dataStart + e.tombstonesOffset + e.meta.docCount));
    const deletedWeights = new Float32Array(allocateShared(e.deletedWeightsLength * 4));
    new Uint8Array(deletedWeights.buffer as ArrayBuffer).set(bytes.subarray(dataStart + e.deletedWeightsOffset, dataStart + e.deletedWeightsOffset + e.deletedWeightsLength * 4));
    return segmentOf(e, arena, tombstones, deletedWeights);
  });
  return { version: view.getUint32(4, true), options: header.options, segments };
}

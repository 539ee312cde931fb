// The format of an upload and its record estimate: the `format` field, then the file name, then
// the part's content type, then the content's first character, in that order; and estimates
// that never fall below the records the job will read, whatever the shape or the chunking.
import { describe, expect, it } from 'vitest';
import { RecordScan, resolveFormat } from '../upload-format.js';

function scan(text: string, chunk = text.length, cap = 1000): RecordScan {
  const s = new RecordScan(cap);
  const bytes = Buffer.from(text, 'utf8');
  for (let i = 0; i < bytes.length; i += chunk) s.feed(bytes.subarray(i, i + chunk));
  return s;
}

const hints = (text: string, filename: string | null, contentType: string | null = null, explicit: string | null = null) => {
  const s = scan(text);
  return resolveFormat({ explicit, filename, contentType, firstByte: s.firstByte, head: s.head });
};

describe('resolveFormat', () => {
  it('believes the file name over the content: a .jsonl starting with [ is JSON Lines, a .csv starting with { is CSV', () => {
    expect(hints('["x"]\n{"id":"a"}\n', 'a.jsonl')).toEqual({ format: 'jsonl', source: 'file name' });
    expect(hints('{"id":"a"}\n', 'a.csv', 'application/json')).toEqual({ format: 'csv', source: 'file name' });
    expect(hints('[{"id":"a"}]', 'export.csv', 'text/csv')).toEqual({ format: 'csv', source: 'file name' });
    expect(hints('id,title\n', 'a.json')).toEqual({ format: 'json', source: 'file name' });
  });

  it('takes the format field first, then the name, then the content type, then the first character', () => {
    expect(hints('id,title\n', 'a.json', 'application/json', 'csv')).toEqual({ format: 'csv', source: 'format field' });
    expect(hints('{"id":"a"}\n', 'a.ndjson', 'text/csv')).toEqual({ format: 'jsonl', source: 'file name' });
    expect(hints('id,title\n', 'data', 'application/json')).toEqual({ format: 'json', source: 'content type' });
    expect(hints('[1]', 'notes.txt', 'text/plain')).toEqual({ format: 'json', source: 'first character' });
    expect(hints('{"id":"a"}\n{"id":"b"}\n', 'upload.bin', 'application/octet-stream')).toEqual({ format: 'jsonl', source: 'first character' });
    expect(hints('id,title\n', null, null)).toEqual({ format: 'csv', source: 'first character' });
  });

  it('reads an unlabelled file that opens a `documents` key as JSON', () => {
    expect(hints('\ufeff  {\n  "documents" : [ {"id": "a"} ] }', 'upload.bin')).toEqual({ format: 'json', source: 'first character' });
    expect(hints('{"documentsX": [1]}', null)).toEqual({ format: 'jsonl', source: 'first character' });
  });
});

describe('RecordScan', () => {
  const docs = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `d${i}`, title: `T ${i}`, tags: ['a', 'b', 'c'] }));

  it('counts the documents of a wrapper object, not the keys of its single top-level object', () => {
    for (const chunk of [1, 7, 100_000]) {
      const wrapped = scan(JSON.stringify({ documents: docs(120) }, null, 1), chunk);
      expect(wrapped.estimate('json'), `chunk ${chunk}`).toBeGreaterThanOrEqual(120);
      expect(scan(JSON.stringify(docs(120)), chunk).estimate('json')).toBe(120);
      const sequence = docs(120).map((d) => JSON.stringify(d)).join('\n');
      expect(scan(sequence, chunk).estimate('json')).toBeGreaterThanOrEqual(120);
    }
    expect(scan('{"documents": []}').estimate('json')).toBeLessThanOrEqual(2);
  });

  it('tells a large wrapper object from a small one past the cap', () => {
    expect(scan(JSON.stringify({ documents: docs(500) }), 4096, 50).estimate('json')).toBeGreaterThan(50);
    expect(scan(JSON.stringify({ documents: docs(10) }), 4096, 50).estimate('json')).toBeLessThanOrEqual(50);
  });
});

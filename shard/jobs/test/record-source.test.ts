// The readers of uploaded files against hostile input: broken quoting, enormous rows, deep
// nesting, truncated files, BOMs and wrong encodings, cut into chunks at every boundary.
import { describe, expect, it } from 'vitest';
import { CsvReader, sniffDelimiter, type CsvRow } from '../csv-records.js';
import { JsonLinesSplitter, JsonSplitter } from '../json-records.js';
import { headerNames, readRecords, type SourceRecord, type UploadFormat } from '../record-source.js';
import { decodeText, detectEncoding } from '../text-decoding.js';

function csv(text: string, chunk = text.length, maxRecordChars = 1000): CsvRow[] {
  const r = new CsvReader({ maxRecordChars });
  const out: CsvRow[] = [];
  for (let i = 0; i < text.length; i += chunk) out.push(...r.push(text.slice(i, i + chunk)));
  out.push(...r.end());
  return out;
}

async function* chunksOf(text: string, size: number): AsyncIterable<string> {
  for (let i = 0; i < text.length; i += size) yield text.slice(i, i + size);
}

async function records(format: UploadFormat, text: string, size = 7, maxRecordChars = 1000): Promise<SourceRecord[]> {
  const out: SourceRecord[] = [];
  for await (const r of readRecords(chunksOf(text, size), { format, maxRecordChars, maxDepth: 32 })) out.push(r);
  return out;
}

describe('CsvReader', () => {
  it('reads quoted fields, escaped quotes, CRLF and multi-line fields, whatever the chunking', () => {
    const text = 'id,title\r\n1,"a, b"\r\n2,"say ""hi"""\r\n3,"two\nlines"\r\n4,last';
    const expected = [
      { line: 1, fields: ['id', 'title'] },
      { line: 2, fields: ['1', 'a, b'] },
      { line: 3, fields: ['2', 'say "hi"'] },
      { line: 4, fields: ['3', 'two\nlines'] },
      { line: 6, fields: ['4', 'last'] },
    ];
    for (const size of [1, 2, 3, 5, 8, 13, 1000]) expect(csv(text, size), `chunk ${size}`).toEqual(expected);
  });

  it('keeps a quote inside an unquoted field and reads on after a bad closing quote', () => {
    for (const size of [1, 3, 1000]) {
      const rows = csv('1,12" screen\n2,"bad "quote" here\n3,fine\n4,"a "b" c",x\n5,"x"y"\n', size);
      expect(rows).toEqual([
        { line: 1, fields: ['1', '12" screen'] },
        { line: 2, fields: ['2', 'bad "quote" here'] },
        { line: 3, fields: ['3', 'fine'] },
        { line: 4, fields: ['4', 'a "b" c', 'x'] },
        { line: 5, fields: ['5', 'x"y'] },
      ]);
    }
  });

  it('reports an unclosed quote on its row and reads the following lines again', () => {
    for (const size of [1, 4, 1000]) {
      const rows = csv('1,a\n2,"never closed\n3,c\n4,d\n', size);
      expect(rows[0]).toEqual({ line: 1, fields: ['1', 'a'] });
      expect(rows[1]!.line).toBe(2);
      expect(rows[1]!.error).toMatch(/opened on line 2 is never closed/);
      expect(rows.slice(2)).toEqual([
        { line: 3, fields: ['3', 'c'] },
        { line: 4, fields: ['4', 'd'] },
      ]);
    }
  });

  it('skips an enormous row alone, without keeping it', () => {
    const big = 'x'.repeat(5000);
    for (const size of [3, 64, 100_000]) {
      const rows = csv(`id,t\n1,${big}\n2,"${big}"\n3,ok\n`, size, 100);
      expect(rows.map((r) => r.line)).toEqual([1, 2, 3, 4]);
      expect(rows[1]!.error).toMatch(/longer than 100/);
      expect(rows[2]!.error).toMatch(/longer than 100/);
      expect(rows[3]).toEqual({ line: 4, fields: ['3', 'ok'] });
    }
  });

  it('sniffs tab and semicolon delimiters', () => {
    expect(sniffDelimiter('id\ttitle\tprice')).toBe('\t');
    expect(sniffDelimiter('id;title;"a,b"')).toBe(';');
    expect(sniffDelimiter('id,title')).toBe(',');
  });

  it('names blank and repeated headers', () => {
    expect(headerNames(['index', 'product', '', ' ', 'a', 'a'])).toEqual(['index', 'product', 'column_3', 'column_4', 'a', 'a_2']);
  });
});

describe('JsonSplitter', () => {
  const split = (text: string, size: number, opts = { maxRecordChars: 1000, maxDepth: 32 }) => {
    const s = new JsonSplitter(opts);
    const out = [];
    for (let i = 0; i < text.length; i += size) out.push(...s.push(text.slice(i, i + size)));
    out.push(...s.end());
    return out;
  };

  it('splits an array into element texts with their lines', () => {
    const text = '[\n {"id": "a", "t": "x ] , y"},\n {"id": "b", "q": "esc \\" ]"}\n]\n';
    for (const size of [1, 2, 7, 1000]) {
      const els = split(text, size);
      expect(els.map((e) => e.line)).toEqual([2, 3]);
      expect(els.map((e) => JSON.parse(e.text!).id)).toEqual(['a', 'b']);
    }
  });

  it('reports a truncated file on the last record and the missing bracket', () => {
    const els = split('[{"id":"a"},{"id":"b","t":"cut her', 4);
    expect(els[0]!.text).toBe('{"id":"a"}');
    expect(els[1]!.error).toMatch(/ends inside the record/);
    expect(els[2]!.fileError).toBe(true);
  });

  it('skips deeply nested and over-long elements without recursion or buffering', () => {
    const deep = '['.repeat(100_000) + ']'.repeat(100_000);
    const els = split(`[{"id":"a"},${deep},{"id":"${'x'.repeat(5000)}"},{"id":"c"}]`, 4096);
    expect(els[0]!.text).toBe('{"id":"a"}');
    expect(els[1]!.error).toMatch(/deeper than 32/);
    expect(els[2]!.error).toMatch(/longer than 1000/);
    expect(els[3]!.text).toBe('{"id":"c"}');
  });

  it('reads a sequence of objects that is not an array, and refuses other shapes', () => {
    expect(split('{"id":1}\n{\n"id":2\n}', 3).map((e) => e.line)).toEqual([1, 2]);
    const bad = split('id,title\n1,a', 3);
    expect(bad[0]!.fileError).toBe(true);
    expect(bad[0]!.error).toMatch(/not a JSON array/);
  });

  it('reads an object holding a `documents` array (the inline body) as that array, other keys aside', () => {
    const text = '{\n "source": {"documents": [1], "x": "}"},\n "documents": [\n  {"id": "fm4", "title": "wrapped ] }"},\n  {"id": "fm5"}\n ],\n "next": [{"a": "b"}]\n}\n';
    for (const size of [1, 2, 5, 1000]) {
      const els = split(text, size);
      expect(els.map((e) => [e.line, e.text && (JSON.parse(e.text) as { id: string }).id, e.error]), `chunk ${size}`).toEqual([
        [4, 'fm4', undefined],
        [5, 'fm5', undefined],
      ]);
    }
    expect(split('{"documents": []}', 3)).toEqual([]);
  });

  it('refuses a lone object that holds no `documents` array instead of reading it as a document', () => {
    for (const text of ['{"documents": {"id": "x"}}', '{"items": [{"id": "x"}]}', '{"id": "x", "title": "one"}\n', '{}']) {
      const els = split(text, 4);
      expect(els, text).toHaveLength(1);
      expect(els[0]!.fileError, text).toBe(true);
      expect(els[0]!.error, text).toMatch(/one JSON object without a `documents` array/);
    }
  });

  it('reports what is wrong around the `documents` array of a wrapper object', () => {
    const after = split('{"documents": [{"id": "a"}]}\n{"id": "b"}', 3);
    expect(after.map((e) => e.text ?? e.error)).toEqual(['{"id": "a"}', "Content after the object's closing '}' is ignored."]);
    expect(after[1]!.fileError).toBe(true);
    const cut = split('{"documents": [{"id": "a"}, {"id": "b"', 3);
    expect(cut.map((e) => e.text ?? e.error)).toEqual(['{"id": "a"}', 'The file ends inside the record that starts on line 1.', "The file ends before the closing ']' of the `documents` array."]);
    const open = split('{"documents": [{"id": "a"}], "more": {', 3);
    expect(open.map((e) => e.text ?? e.error)).toEqual(['{"id": "a"}', "The file ends before the object's closing '}'."]);
    const twice = split('{"documents": [{"id": "a"}], "documents": [{"id": "b"}]}', 3);
    expect(twice.map((e) => e.text ?? e.error)).toEqual(['{"id": "a"}', 'The object has a second `documents` key; only the first is read.']);
  });
});

describe('JsonLinesSplitter', () => {
  it('gives each non-blank line with its number and skips over-long lines', () => {
    const s = new JsonLinesSplitter(50);
    const text = `{"id":1}\n\n{"id":2}\r\n${'{"x":"' + 'y'.repeat(100) + '"}'}\n{"id":3`;
    const out = [];
    for (let i = 0; i < text.length; i += 5) out.push(...s.push(text.slice(i, i + 5)));
    out.push(...s.end());
    expect(out.map((e) => e.line)).toEqual([1, 3, 4, 5]);
    expect(out[2]!.error).toMatch(/longer than 50/);
    expect(out[3]!.text).toBe('{"id":3');
  });
});

describe('readRecords', () => {
  it('numbers records the same way for every format and keeps bad ones in place', async () => {
    const csvRecs = await records('csv', 'id,title,,\n1,a,x,y\n\n2,"b\n3,c\n');
    expect(csvRecs.map((r) => [r.n, r.line, r.value ?? r.error?.slice(0, 20)])).toEqual([
      [1, 2, { id: '1', title: 'a', column_3: 'x', column_4: 'y' }],
      [2, 4, 'A quoted field opene'],
      [3, 5, { id: '3', title: 'c' }],
    ]);
    const jsonl = await records('jsonl', '{"id":"1"}\nnot json\n[1]\n{"id":"4"}');
    expect(jsonl.map((r) => [r.n, r.line, r.error ? 'error' : r.value!.id])).toEqual([
      [1, 1, '1'],
      [2, 2, 'error'],
      [3, 3, 'error'],
      [4, 4, '4'],
    ]);
    expect(jsonl[2]!.error).toMatch(/an array, not an object/);
  });

  it('fails a CSV row with more cells than the header row, naming the counts; empty extra cells are no data', async () => {
    const out = await records('csv', 'id,title,,\n1,a,x,y\n2,b,c,d,e,f\n3,c,,,,\n4,d,x,y, \n');
    expect(out.map((r) => [r.n, r.line, r.value ?? r.error])).toEqual([
      [1, 2, { id: '1', title: 'a', column_3: 'x', column_4: 'y' }],
      [2, 3, 'The row has 6 cells but the header row has 4 columns; cells past the last column would be lost.'],
      [3, 4, { id: '3', title: 'c', column_3: '', column_4: '' }],
      [4, 5, { id: '4', title: 'd', column_3: 'x', column_4: 'y' }],
    ]);
  });

  it('refuses a CSV file whose header row is JSON, instead of storing its pieces as documents', async () => {
    for (const text of ['{"id":"x","title":"y"}\n{"id":"z"}\n', '[{"id":"m1","title":"Labelled CSV"}]', '[\n  {"id": "x"}\n]\n', '["x"]\n']) {
      const out = await records('csv', text);
      expect(out, text).toHaveLength(1);
      expect(out[0], text).toMatchObject({ n: 0, line: 1, fileError: true });
      expect(out[0]!.error, text).toMatch(/header row .*JSON/);
    }
    // bracketed column names (SQL Server exports) are column names
    expect((await records('csv', '[id],[title]\n1,a\n'))[0]!.value).toEqual({ '[id]': '1', '[title]': 'a' });
  });

  it('fails a JSON record holding a number too large to store (1e309 reads as Infinity)', async () => {
    for (const format of ['json', 'jsonl'] as const) {
      const text = format === 'json' ? '[{"id":"a","price":1e309},{"id":"b","raw":{"w":[-1e400]}},{"id":"c","price":1e308}]' : '{"id":"a","price":1e309}\n{"id":"b","raw":{"w":[-1e400]}}\n{"id":"c","price":1e308}\n';
      const out = await records(format, text);
      expect(out.map((r) => r.error ?? r.value!.id), format).toEqual([
        'The value of "price" is a number too large to store (beyond ±1.8e308).',
        'The value of "raw" holds a number too large to store (beyond ±1.8e308).',
        'c',
      ]);
    }
  });

  it('fails a JSON Lines line that is a whole `{documents: [...]}` body', async () => {
    const out = await records('jsonl', '{"documents":[{"id":"a"}]}\n{"id":"b","documents":["manual.pdf"]}\n');
    expect(out[0]!.error).toMatch(/holds a `documents` array: JSON Lines has one document per line/);
    expect(out[1]!.value).toEqual({ id: 'b', documents: ['manual.pdf'] });
  });

  it('rejects a too-deep JSON Lines record after parsing it', async () => {
    const deep = `{"a":${'['.repeat(40)}${']'.repeat(40)}}`;
    const out = await records('jsonl', `${deep}\n{"id":"ok"}`);
    expect(out[0]!.error).toMatch(/deeper than 32/);
    expect(out[1]!.value).toEqual({ id: 'ok' });
  });
});

describe('text decoding', () => {
  async function decode(bytes: Buffer, requested: string | null = null): Promise<{ text: string; encoding: string }> {
    async function* src() {
      for (let i = 0; i < bytes.length; i += 3) yield bytes.subarray(i, i + 3);
    }
    const d = await decodeText(src(), requested);
    let text = '';
    for await (const c of d.chunks) text += c;
    return { text, encoding: d.encoding };
  }

  it('drops a UTF-8 BOM and reads UTF-16 by its BOM', async () => {
    expect(await decode(Buffer.from('\ufeffid,title\n1,café', 'utf8'))).toEqual({ text: 'id,title\n1,café', encoding: 'utf-8' });
    const le = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('id,t\n1,ü', 'utf16le')]);
    expect(await decode(le)).toEqual({ text: 'id,t\n1,ü', encoding: 'utf-16le' });
  });

  it('reads invalid UTF-8 as Windows-1252 and BOM-less UTF-16 by its NULs', async () => {
    const latin = Buffer.from([0x69, 0x64, 0x0a, 0x63, 0x61, 0x66, 0xe9]);
    expect(await decode(latin)).toEqual({ text: 'id\ncafé', encoding: 'windows-1252' });
    expect(detectEncoding(Buffer.from('id,title\n1,abc', 'utf16le'), null).encoding).toBe('utf-16le');
    expect((await decode(latin, 'utf-8')).text).toBe('id\ncaf\ufffd');
  });
});

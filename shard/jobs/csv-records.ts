// A streaming CSV reader (RFC 4180 plus what real exports do): fields quoted with `"` and `""`
// inside quotes, CRLF, LF or CR line ends, quoted fields across lines, a quote inside an
// unquoted field kept as a character, a stray quote inside a quoted field (`"a "b" c"`) kept as
// a character, the field then ending at the next quote that is followed by a delimiter or a line
// end (and at a line end in any case, so a stray quote cannot swallow the following rows).
// Every row carries the line it starts on. Two failures stay local to their row:
//   - a row longer than `maxRecordChars` is reported and skipped without being held in memory;
//   - a quote that is never closed is reported at the end of the file and the text after the
//     line it opened on is read again, so one stray quote does not swallow the rest of the file.
// Why not csv-parse: with `max_record_size`, its error ends the parse (every later row is lost),
// and without `relax_quotes` one bad quote takes the following rows with it.

export interface CsvRow {
  /** line the row starts on (1-based) */
  line: number;
  fields?: string[];
  error?: string;
}

export interface CsvReaderOptions {
  delimiter?: string;
  /** longest row, in characters */
  maxRecordChars: number;
  /** rereads after unclosed quotes, at most (each is bounded by maxRecordChars) */
  maxRescans?: number;
}

const QUOTE = 0x22;
const LF = 0x0a;
const CR = 0x0d;

const enum State {
  FieldStart,
  Unquoted,
  Quoted,
  QuoteInQuoted,
  /** a quoted field after a stray quote: quotes are kept unless they close it; a line end ends the row */
  QuotedRelaxed,
}

export class CsvReader {
  private readonly delim: number;
  private readonly maxChars: number;
  private rescansLeft: number;
  private state = State.FieldStart;
  private fields: string[] = [];
  private field = '';
  /** current line number (1-based) and the line the current row started on */
  private line = 1;
  private rowLine = 1;
  private rowChars = 0;
  /** the row is too long: scanning on to its end without keeping anything */
  private skipping = false;
  /** a CR ended the last row; a LF right after it belongs to the same line end */
  private afterCr = false;
  /** raw text of the current row that came in earlier chunks (for the reread of an unclosed quote) */
  private rawParts: string[] = [];
  private quoteLine = 0;

  constructor(options: CsvReaderOptions) {
    const d = options.delimiter ?? ',';
    if (d.length !== 1 || d === '"' || d === '\n' || d === '\r') throw new Error(`invalid CSV delimiter ${JSON.stringify(d)}`);
    this.delim = d.charCodeAt(0);
    this.maxChars = options.maxRecordChars;
    this.rescansLeft = options.maxRescans ?? 100;
  }

  /** Rows completed by this chunk of text. */
  push(text: string): CsvRow[] {
    const out: CsvRow[] = [];
    this.scan(text, out);
    return out;
  }

  /** Rows left when the text ends (a last row without a line end, an unclosed quote). */
  end(): CsvRow[] {
    const out: CsvRow[] = [];
    this.finish(out);
    return out;
  }

  private finish(out: CsvRow[]): void {
    if (this.state === State.Quoted && !this.skipping) {
      const raw = this.rawParts.join('');
      const opened = this.quoteLine || this.rowLine;
      const cut = firstLineEnd(raw);
      if (this.rescansLeft > 0 && cut >= 0) {
        this.rescansLeft--;
        out.push({ line: this.rowLine, error: `A quoted field opened on line ${opened} is never closed; the row is skipped and the lines after line ${this.rowLine} are read again.` });
        const rest = raw.slice(cut);
        this.resetRow();
        this.line = this.rowLine + 1;
        this.rowLine = this.line;
        this.afterCr = false;
        this.scan(rest, out);
        this.finish(out);
        return;
      }
      out.push({ line: this.rowLine, error: `A quoted field opened on line ${opened} is never closed; the file ends inside it.` });
      this.resetRow();
      return;
    }
    if (this.skipping) {
      const unclosed = this.state === State.Quoted ? ' (a quoted field in it is never closed)' : '';
      out.push({ line: this.rowLine, error: `The row is longer than ${this.maxChars} characters${unclosed}; it is skipped.` });
      this.resetRow();
      return;
    }
    if (this.state !== State.FieldStart || this.fields.length > 0 || this.field.length > 0) {
      this.endField();
      this.emit(out);
    }
  }

  private scan(text: string, out: CsvRow[]): void {
    const n = text.length;
    const delim = this.delim;
    let rowStart = 0;
    let i = 0;
    if (this.afterCr && n > 0) {
      this.afterCr = false;
      if (text.charCodeAt(0) === LF) {
        i = 1;
        rowStart = 1;
      }
    }
    // start of the pending slice of the current field (a field may go on from the last chunk), or -1
    let seg = this.state === State.Quoted || this.state === State.Unquoted || this.state === State.QuotedRelaxed ? i : -1;
    for (; i < n; i++) {
      const c = text.charCodeAt(i);
      if (!this.skipping && ++this.rowChars > this.maxChars) {
        // too long: drop what was kept and scan on to the row's end without keeping anything
        this.skipping = true;
        this.fields = [];
        this.field = '';
        this.rawParts = [];
        seg = -1;
      }
      switch (this.state) {
        case State.FieldStart:
          if (c === QUOTE) {
            this.state = State.Quoted;
            this.quoteLine = this.line;
            seg = i + 1;
          } else if (c === delim) {
            if (!this.skipping) this.fields.push('');
          } else if (c === LF || c === CR) {
            i = this.lineBreak(text, i, c, out);
            rowStart = i + 1;
            seg = -1;
            continue;
          } else {
            this.state = State.Unquoted;
            seg = i;
          }
          break;
        case State.Unquoted:
          if (c === delim) {
            this.take(text, seg, i);
            seg = -1;
            this.endField();
            this.state = State.FieldStart;
          } else if (c === LF || c === CR) {
            this.take(text, seg, i);
            seg = -1;
            i = this.lineBreak(text, i, c, out);
            rowStart = i + 1;
            continue;
          }
          break;
        case State.Quoted:
          if (c === QUOTE) {
            this.take(text, seg, i);
            seg = -1;
            this.state = State.QuoteInQuoted;
          } else if (c === LF) {
            // line numbers count LF only inside quotes (a CR-only file numbers its rows, not its quoted lines)
            this.line++;
          }
          break;
        case State.QuoteInQuoted:
          if (c === QUOTE) {
            // "" inside quotes is one quote
            if (!this.skipping) this.field += '"';
            this.state = State.Quoted;
            seg = i + 1;
          } else if (c === delim) {
            this.endField();
            this.state = State.FieldStart;
          } else if (c === LF || c === CR) {
            i = this.lineBreak(text, i, c, out);
            rowStart = i + 1;
            continue;
          } else {
            // a quote followed by text did not close the field: keep it and read on
            if (!this.skipping) this.field += '"';
            this.state = State.QuotedRelaxed;
            seg = i;
          }
          break;
        case State.QuotedRelaxed:
          if (c === QUOTE) {
            this.take(text, seg, i);
            seg = -1;
            this.state = State.QuoteInQuoted;
          } else if (c === delim) {
            this.take(text, seg, i);
            seg = -1;
            this.endField();
            this.state = State.FieldStart;
          } else if (c === LF || c === CR) {
            this.take(text, seg, i);
            seg = -1;
            i = this.lineBreak(text, i, c, out);
            rowStart = i + 1;
            continue;
          }
          break;
      }
    }
    // the row goes on in the next chunk: keep the pending slice and the raw text
    if (seg >= 0) this.take(text, seg, n);
    if (!this.skipping && rowStart < n && (this.state !== State.FieldStart || this.fields.length > 0 || this.field.length > 0)) {
      this.rawParts.push(text.slice(rowStart));
    }
  }

  private take(text: string, from: number, to: number): void {
    if (from >= 0 && to > from && !this.skipping) this.field += text.slice(from, to);
  }

  private endField(): void {
    if (!this.skipping) this.fields.push(this.field);
    this.field = '';
  }

  /**
   * A line end outside quotes at `i` (character `c`): completes the row and consumes a CRLF pair
   * (or remembers a CR at the chunk's end, so an LF opening the next chunk is not a blank row).
   * Returns the index of the last character consumed.
   */
  private lineBreak(text: string, i: number, c: number, out: CsvRow[]): number {
    this.endLine(text, i, c, out);
    if (c !== CR) return i;
    if (i + 1 < text.length) return text.charCodeAt(i + 1) === LF ? i + 1 : i;
    this.afterCr = true;
    return i;
  }

  /** A line end outside quotes: the row is complete. */
  private endLine(_text: string, _i: number, _c: number, out: CsvRow[]): void {
    if (this.state !== State.FieldStart || this.fields.length > 0) this.endField();
    if (this.skipping) {
      out.push({ line: this.rowLine, error: `The row is longer than ${this.maxChars} characters; it is skipped.` });
    } else {
      this.emit(out);
    }
    this.resetRow();
    this.line++;
    this.rowLine = this.line;
  }

  private emit(out: CsvRow[]): void {
    const f = this.fields;
    // a blank line is no row
    if (!(f.length === 0 || (f.length === 1 && f[0] === ''))) out.push({ line: this.rowLine, fields: f });
  }

  private resetRow(): void {
    this.state = State.FieldStart;
    this.fields = [];
    this.field = '';
    this.rowChars = 0;
    this.skipping = false;
    this.rawParts = [];
    this.quoteLine = 0;
  }
}

/** Index just after the first line end of `s`, or -1. */
function firstLineEnd(s: string): number {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === LF) return i + 1;
    if (c === CR) return i + 1 < s.length && s.charCodeAt(i + 1) === LF ? i + 2 : i + 1;
  }
  return -1;
}

/** The delimiter of a header line: the most frequent of , ; tab | outside quotes (comma on a tie). */
export function sniffDelimiter(headerLine: string): string {
  const counts = new Map<string, number>([
    [',', 0],
    ['\t', 0],
    [';', 0],
    ['|', 0],
  ]);
  let quoted = false;
  for (const ch of headerLine) {
    if (ch === '"') quoted = !quoted;
    else if (!quoted && counts.has(ch)) counts.set(ch, counts.get(ch)! + 1);
  }
  let best = ',';
  for (const [d, n] of counts) if (n > counts.get(best)!) best = d;
  return best;
}

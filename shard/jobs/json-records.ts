// Streaming split of a JSON array (or of a sequence of top-level JSON values, for a file of
// objects that is not wrapped in an array) into the text of its elements, without parsing the
// whole file: a small state machine follows strings, escapes and nesting, and hands over each
// element's text with the line it starts on. Each element is then parsed on its own, so a
// malformed element fails alone. Elements nested deeper than `maxDepth` or longer than
// `maxRecordChars` are reported and skipped without being held in memory; the machine never
// recurses, so a million opening brackets cost a counter, not a stack.

export interface JsonElement {
  /** line the element starts on (1-based) */
  line: number;
  text?: string;
  error?: string;
  /** the error concerns the file, not one element (e.g. not an array, truncated after the last element) */
  fileError?: boolean;
}

export interface JsonSplitterOptions {
  maxRecordChars: number;
  maxDepth: number;
}

const enum Mode {
  /** before the first non-blank character */
  Start,
  /** inside the top-level array (or sequence), before an element */
  BeforeValue,
  InValue,
  /** after an element, before `,` or `]` */
  AfterValue,
  /** after the closing `]` */
  Done,
  /** the file is not JSON we can split; the rest is ignored */
  Broken,
}

const isBlank = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

export class JsonSplitter {
  private mode = Mode.Start;
  /** true: top-level array; false: a sequence of values */
  private array = true;
  private line = 1;
  private depth = 0;
  private inString = false;
  private escaped = false;
  private scalar = false;
  private parts: string[] = [];
  private chars = 0;
  private startLine = 0;
  private tooDeep = false;
  private tooLong = false;
  private maxSeenDepth = 0;

  constructor(private readonly options: JsonSplitterOptions) {}

  push(text: string): JsonElement[] {
    const out: JsonElement[] = [];
    this.scan(text, out);
    return out;
  }

  end(): JsonElement[] {
    const out: JsonElement[] = [];
    if (this.mode === Mode.InValue) {
      if (this.scalar && !this.inString && this.depth === 0) this.finishValue(out);
      else {
        out.push({ line: this.startLine, error: `The file ends inside the record that starts on line ${this.startLine}.` });
        if (this.array) out.push({ line: this.line, error: "The file ends before the array's closing ']'.", fileError: true });
      }
    } else if (this.array && (this.mode === Mode.BeforeValue || this.mode === Mode.AfterValue)) {
      out.push({ line: this.line, error: "The file ends before the array's closing ']'.", fileError: true });
    }
    this.mode = Mode.Done;
    return out;
  }

  private scan(text: string, out: JsonElement[]): void {
    const n = text.length;
    let seg = this.mode === Mode.InValue ? 0 : -1;
    for (let i = 0; i < n; i++) {
      const c = text.charCodeAt(i);
      if (c === 0x0a) this.line++;
      switch (this.mode) {
        case Mode.Start:
          if (isBlank(c)) break;
          if (c === 0x5b /* [ */) {
            this.array = true;
            this.mode = Mode.BeforeValue;
          } else if (c === 0x7b /* { */) {
            // objects one after another (JSON Lines spread over lines, or one object)
            this.array = false;
            this.startValue(c);
            seg = i;
          } else {
            out.push({ line: this.line, error: `The file is not a JSON array of objects: it starts with ${JSON.stringify(text[i])}.`, fileError: true });
            this.mode = Mode.Broken;
            return;
          }
          break;
        case Mode.BeforeValue:
          if (isBlank(c)) break;
          if (c === 0x5d /* ] */ && this.array) {
            this.mode = Mode.Done;
            break;
          }
          if (c === 0x2c /* , */) {
            out.push({ line: this.line, error: 'An empty element (two commas in a row).' });
            break;
          }
          this.startValue(c);
          seg = i;
          break;
        case Mode.InValue: {
          let ended = false;
          if (this.inString) {
            if (this.escaped) this.escaped = false;
            else if (c === 0x5c /* \ */) this.escaped = true;
            else if (c === 0x22 /* " */) {
              this.inString = false;
              if (this.scalar && this.depth === 0) ended = true;
            }
          } else if (this.scalar) {
            if (c === 0x2c || c === 0x5d || isBlank(c)) {
              // a bare scalar ends before this character
              this.take(text, seg, i);
              seg = -1;
              this.finishValue(out);
              this.mode = Mode.AfterValue;
              i--;
              if (c === 0x0a) this.line--;
              break;
            }
          } else if (c === 0x22) this.inString = true;
          else if (c === 0x7b || c === 0x5b) {
            if (++this.depth > this.maxSeenDepth) this.maxSeenDepth = this.depth;
            if (this.depth > this.options.maxDepth && !this.tooDeep) {
              this.tooDeep = true;
              this.parts = [];
              seg = -1;
            }
          } else if (c === 0x7d || c === 0x5d) {
            if (--this.depth === 0) ended = true;
          }
          if (!this.tooDeep && !this.tooLong && ++this.chars > this.options.maxRecordChars) {
            this.tooLong = true;
            this.parts = [];
            seg = -1;
          }
          if (ended) {
            this.take(text, seg, i + 1);
            seg = -1;
            this.finishValue(out);
            this.mode = this.array ? Mode.AfterValue : Mode.BeforeValue;
          }
          break;
        }
        case Mode.AfterValue:
          if (isBlank(c)) break;
          if (c === 0x2c) {
            this.mode = Mode.BeforeValue;
          } else if (c === 0x5d) this.mode = Mode.Done;
          else {
            // a missing comma: read the next element anyway, and say so
            out.push({ line: this.line, error: `Expected ',' or ']' after the record that ended before line ${this.line}, found ${JSON.stringify(text[i])}.` });
            this.startValue(c);
            seg = i;
          }
          break;
        case Mode.Done:
          if (!isBlank(c)) {
            out.push({ line: this.line, error: "Content after the array's closing ']' is ignored.", fileError: true });
            this.mode = Mode.Broken;
            return;
          }
          break;
        case Mode.Broken:
          return;
      }
    }
    if (this.mode === Mode.InValue) this.take(text, seg, n);
  }

  private startValue(c: number): void {
    this.mode = Mode.InValue;
    this.startLine = this.line;
    this.parts = [];
    this.chars = 1;
    this.tooDeep = false;
    this.tooLong = false;
    this.escaped = false;
    this.maxSeenDepth = 0;
    if (c === 0x7b || c === 0x5b) {
      this.depth = 1;
      this.maxSeenDepth = 1;
      this.inString = false;
      this.scalar = false;
    } else {
      this.depth = 0;
      this.scalar = true;
      this.inString = c === 0x22;
    }
  }

  private take(text: string, from: number, to: number): void {
    if (from >= 0 && to > from && !this.tooDeep && !this.tooLong) this.parts.push(text.slice(from, to));
  }

  private finishValue(out: JsonElement[]): void {
    if (this.tooDeep) out.push({ line: this.startLine, error: `The record is nested deeper than ${this.options.maxDepth} levels.` });
    else if (this.tooLong) out.push({ line: this.startLine, error: `The record is longer than ${this.options.maxRecordChars} characters.` });
    else out.push({ line: this.startLine, text: this.parts.join('') });
    this.parts = [];
  }
}

/** JSON Lines: one value per line, each line on its own; over-long lines are skipped unkept. */
export class JsonLinesSplitter {
  private line = 1;
  private parts: string[] = [];
  private chars = 0;
  private tooLong = false;

  constructor(private readonly maxRecordChars: number) {}

  push(text: string): JsonElement[] {
    const out: JsonElement[] = [];
    let from = 0;
    for (;;) {
      const nl = text.indexOf('\n', from);
      const to = nl < 0 ? text.length : nl;
      this.add(text, from, to);
      if (nl < 0) break;
      this.finishLine(out);
      from = nl + 1;
    }
    return out;
  }

  end(): JsonElement[] {
    const out: JsonElement[] = [];
    this.finishLine(out);
    return out;
  }

  private add(text: string, from: number, to: number): void {
    if (to <= from || this.tooLong) return;
    this.chars += to - from;
    if (this.chars > this.maxRecordChars) {
      this.tooLong = true;
      this.parts = [];
      return;
    }
    this.parts.push(text.slice(from, to));
  }

  private finishLine(out: JsonElement[]): void {
    const line = this.line++;
    if (this.tooLong) out.push({ line, error: `The line is longer than ${this.maxRecordChars} characters.` });
    else {
      const text = this.parts.join('');
      if (text.trim().length > 0) out.push({ line, text });
    }
    this.parts = [];
    this.chars = 0;
    this.tooLong = false;
  }
}

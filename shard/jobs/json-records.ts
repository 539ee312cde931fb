// Streaming split of a JSON upload into the text of its records, without parsing the whole file:
// a small state machine follows strings, escapes and nesting, and hands over each record's text
// with the line it starts on. Each record is then parsed on its own, so a malformed one fails
// alone. Records nested deeper than `maxDepth` or longer than `maxRecordChars` are reported and
// skipped without being held in memory; the machine never recurses, so a million opening brackets
// cost a counter, not a stack.
//
// What a JSON upload may be (spec: "JSON uploads are an array of documents"):
//   - an array: its elements are the records;
//   - an object holding a `documents` array (the body of inline ingestion): the elements of that
//     array are the records, the object's other keys are skipped unkept;
//   - objects one after another (JSON Lines spread over lines, sent as .json): each is a record.
// A single object without a `documents` array is none of these: it is refused as a whole rather
// than stored as one document made of a wrapper (`{"items": [...]}`). Whether the first object
// is a wrapper is known at its `"documents": [`, which may come after other keys; until then it is
// kept as a record would be, in case it is the first of a sequence.

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
  /** inside the top-level array (or sequence, or `documents` array), before an element */
  BeforeValue,
  InValue,
  /** after an element, before `,` or `]` */
  AfterValue,
  /** after the first top-level object, which held no `documents` array: a lone object, or the first of a sequence */
  AfterFirst,
  /** inside the wrapper object after its `documents` array: the other keys are skipped */
  Outer,
  /** after the closing `]` (or the wrapper's `}`) */
  Done,
  /** the file is not JSON we can split; the rest is ignored */
  Broken,
}

/** Where the keys of an object's first level stand, to find `"documents": [`. */
const enum Key {
  /** after `{` or `,`: a key comes next */
  Expect,
  InKey,
  /** after the key, before `:` */
  AfterKey,
  /** after `:`, before the value */
  AfterColon,
  /** in or after a value, before `,` or `}` */
  InValue,
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const WRAPPER_KEY = 'documents';

const isBlank = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

const LONE_OBJECT =
  'The file is one JSON object without a `documents` array: a JSON upload is an array of documents ([{...}, ...]) or an object {"documents": [...]}. ' +
  'For one document per line, name the file .jsonl or send format=jsonl.';
const DOCUMENTS_OPEN = "The file ends before the closing ']' of the `documents` array.";

export class JsonSplitter {
  private mode = Mode.Start;
  /** true: top-level array (or the `documents` array); false: a sequence of values */
  private array = true;
  /** the records are the elements of the `documents` array of a top-level object */
  private wrapped = false;
  /** the value being read is the first top-level object: its keys are followed */
  private watchKeys = false;
  private keyState = Key.InValue;
  private key = '';
  /** the first top-level object, held until it is known whether more values follow */
  private first: JsonElement | null = null;
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
    const closing = this.wrapped ? DOCUMENTS_OPEN : "The file ends before the array's closing ']'.";
    if (this.mode === Mode.InValue) {
      if (this.scalar && !this.inString && this.depth === 0) this.finishValue(out);
      else {
        out.push({ line: this.startLine, error: `The file ends inside the record that starts on line ${this.startLine}.` });
        if (this.array) out.push({ line: this.line, error: closing, fileError: true });
      }
    } else if (this.array && (this.mode === Mode.BeforeValue || this.mode === Mode.AfterValue)) {
      out.push({ line: this.line, error: closing, fileError: true });
    } else if (this.mode === Mode.AfterFirst) {
      out.push({ line: this.first!.line, error: LONE_OBJECT, fileError: true });
    } else if (this.mode === Mode.Outer) {
      out.push({ line: this.line, error: "The file ends before the object's closing '}'.", fileError: true });
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
          if (c === OPEN_ARRAY) {
            this.array = true;
            this.mode = Mode.BeforeValue;
          } else if (c === OPEN_OBJECT) {
            // a wrapper object, a lone object or the first of a sequence: its keys tell
            this.array = false;
            this.startValue(c);
            this.watchKeys = true;
            this.keyState = Key.Expect;
            seg = i;
          } else {
            out.push({ line: this.line, error: `The file is not a JSON array of objects: it starts with ${JSON.stringify(text[i])}.`, fileError: true });
            this.mode = Mode.Broken;
            return;
          }
          break;
        case Mode.BeforeValue:
          if (isBlank(c)) break;
          if (c === CLOSE_ARRAY && this.array) {
            this.closeArray();
            break;
          }
          if (c === COMMA) {
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
            else if (c === BACKSLASH) this.escaped = true;
            else if (c === QUOTE) {
              this.inString = false;
              if (this.scalar && this.depth === 0) ended = true;
            }
            if (this.watchKeys && this.keyState === Key.InKey) this.followKeyText(text, i);
          } else if (this.scalar) {
            if (c === COMMA || c === CLOSE_ARRAY || isBlank(c)) {
              // a bare scalar ends before this character
              this.take(text, seg, i);
              seg = -1;
              this.finishValue(out);
              this.mode = Mode.AfterValue;
              i--;
              if (c === 0x0a) this.line--;
              break;
            }
          } else {
            if (this.watchKeys && this.depth === 1 && this.followKey(c)) {
              // `"documents": [` in the first object: its elements are the records, not the object
              this.watchKeys = false;
              this.wrapped = true;
              this.array = true;
              this.parts = [];
              seg = -1;
              this.mode = Mode.BeforeValue;
              break;
            }
            if (c === QUOTE) this.inString = true;
            else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
              if (++this.depth > this.maxSeenDepth) this.maxSeenDepth = this.depth;
              if (this.depth > this.options.maxDepth && !this.tooDeep) {
                this.tooDeep = true;
                this.parts = [];
                seg = -1;
              }
            } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
              if (--this.depth === 0) ended = true;
            }
          }
          if (!this.tooDeep && !this.tooLong && ++this.chars > this.options.maxRecordChars) {
            this.tooLong = true;
            this.parts = [];
            seg = -1;
          }
          if (ended) {
            this.take(text, seg, i + 1);
            seg = -1;
            if (this.watchKeys) {
              // the first object held no `documents` array: a record if more values follow
              this.watchKeys = false;
              const held: JsonElement[] = [];
              this.finishValue(held);
              this.first = held[0]!;
              this.mode = Mode.AfterFirst;
            } else {
              this.finishValue(out);
              this.mode = this.array ? Mode.AfterValue : Mode.BeforeValue;
            }
          }
          break;
        }
        case Mode.AfterFirst:
          if (isBlank(c)) break;
          // more values follow: a sequence, of which the first object is the first record
          out.push(this.first!);
          this.first = null;
          this.mode = Mode.BeforeValue;
          i--;
          break;
        case Mode.AfterValue:
          if (isBlank(c)) break;
          if (c === COMMA) {
            this.mode = Mode.BeforeValue;
          } else if (c === CLOSE_ARRAY) this.closeArray();
          else {
            // a missing comma: read the next element anyway, and say so
            out.push({ line: this.line, error: `Expected ',' or ']' after the record that ended before line ${this.line}, found ${JSON.stringify(text[i])}.` });
            this.startValue(c);
            seg = i;
          }
          break;
        case Mode.Outer:
          // the rest of the wrapper object, skipped without keeping anything
          if (this.inString) {
            if (this.escaped) this.escaped = false;
            else if (c === BACKSLASH) this.escaped = true;
            else if (c === QUOTE) this.inString = false;
            if (this.depth === 1 && this.keyState === Key.InKey) this.followKeyText(text, i);
            break;
          }
          if (this.depth === 1 && this.followKey(c)) {
            out.push({ line: this.line, error: 'The object has a second `documents` key; only the first is read.', fileError: true });
          }
          if (c === QUOTE) this.inString = true;
          else if (c === OPEN_OBJECT || c === OPEN_ARRAY) this.depth++;
          else if ((c === CLOSE_OBJECT || c === CLOSE_ARRAY) && --this.depth === 0) this.mode = Mode.Done;
          break;
        case Mode.Done:
          if (!isBlank(c)) {
            const closer = this.wrapped ? "the object's closing '}'" : "the array's closing ']'";
            out.push({ line: this.line, error: `Content after ${closer} is ignored.`, fileError: true });
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

  /** The `]` of the top-level array, or of the `documents` array (the wrapper object goes on). */
  private closeArray(): void {
    if (!this.wrapped) {
      this.mode = Mode.Done;
      return;
    }
    this.mode = Mode.Outer;
    this.depth = 1;
    this.inString = false;
    this.escaped = false;
    this.keyState = Key.InValue;
  }

  /**
   * A character outside strings on the first level of an object whose keys are followed (the
   * first object, or the wrapper after its `documents` array). True at the `[` that opens the
   * value of a `documents` key.
   */
  private followKey(c: number): boolean {
    if (isBlank(c)) return false;
    switch (this.keyState) {
      case Key.Expect:
        if (c === QUOTE) {
          this.keyState = Key.InKey;
          this.key = '';
        }
        return false;
      case Key.AfterKey:
        if (c === COLON) this.keyState = Key.AfterColon;
        return false;
      case Key.AfterColon:
        this.keyState = Key.InValue;
        return c === OPEN_ARRAY && this.key === WRAPPER_KEY;
      default:
        if (c === COMMA) this.keyState = Key.Expect;
        return false;
    }
  }

  /** A character of a key being read (the closing quote has already ended the string). */
  private followKeyText(text: string, i: number): void {
    if (!this.inString) this.keyState = Key.AfterKey;
    // only `documents` matters: longer keys need not be kept
    else if (this.key.length <= WRAPPER_KEY.length) this.key += text[i];
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
    if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      this.depth = 1;
      this.maxSeenDepth = 1;
      this.inString = false;
      this.scalar = false;
    } else {
      this.depth = 0;
      this.scalar = true;
      this.inString = c === QUOTE;
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

// What a router sends to every part of an index, beside the query, so that the part can apply
// the index's synonyms and merchandising rules: only what applies to this query at this time
// (the router chose it from the packed configuration), so a shard never reads index metadata.
// Pins are placed by the router after the parts' lists are merged; a part only returns the
// pinned documents it holds.

/** Documents a rule acts on: by id, or by an attribute having one of the values. */
export type RuleTarget = { ids: string[] } | { field: string; values: (string | number | boolean)[] };

/** A scoring rule: boost (factor > 1), bury (factor < 1) or hide. */
export interface ScoringRule {
  id: string;
  action: 'boost' | 'bury' | 'hide';
  target: RuleTarget;
  /** score multiplier of boost and bury; absent for hide */
  factor?: number;
}

/** A pin: the target documents go to `position` (1-based) of the merged list. */
export interface PinRule {
  id: string;
  target: RuleTarget;
  position: number;
}

/** One reading of the query through a synonym: the words `from` replaced by `to`. */
export interface SynonymReading {
  /** the whole query text with the replacement made */
  query: string;
  from: string;
  to: string;
}

export interface RankingPayload {
  synonyms?: SynonymReading[];
  rules?: ScoringRule[];
  pins?: PinRule[];
}

/** What a part adds to its result for the router when pins or debug were asked for. */
export interface PinnedSuggestion<S> {
  rule: string;
  position: number;
  /** order of the document within the rule's id list (attribute pins: 0) */
  order: number;
  suggestion: S;
}

// What the peer libraries have in common for a comparison: fill with titled documents, then
// answer a text with the ids of the best matches, best first.
export interface TitledDocument {
  id: string;
  title: string;
}

export interface PeerEngine {
  readonly name: string;
  /** the library version and every option that differs from its defaults, for the report */
  readonly config: Record<string, unknown>;
  add(docs: readonly TitledDocument[]): Promise<void>;
  search(text: string, limit: number): Promise<string[]>;
}

// Branded identifiers: every id that crosses a process boundary carries its kind in the type,
// so a tenant id cannot be passed where an index id is expected.
declare const brand: unique symbol;
type Brand<T, B extends string> = T & { readonly [brand]: B };

export type TenantId = Brand<string, 'TenantId'>;
export type IndexId = Brand<string, 'IndexId'>;
export type PhysicalIndexId = Brand<string, 'PhysicalIndexId'>;
export type PartitionId = Brand<number, 'PartitionId'>;
export type NodeId = Brand<string, 'NodeId'>;
export type JobId = Brand<string, 'JobId'>;
export type KeyId = Brand<string, 'KeyId'>;

export const TenantId = (s: string) => s as TenantId;
export const IndexId = (s: string) => s as IndexId;
export const PhysicalIndexId = (s: string) => s as PhysicalIndexId;
export const PartitionId = (n: number) => n as PartitionId;
export const NodeId = (s: string) => s as NodeId;
export const JobId = (s: string) => s as JobId;
export const KeyId = (s: string) => s as KeyId;

/** The index_id rule of the specification: alphanumeric with dashes or underscores. */
export const ID_PATTERN = '^[A-Za-z0-9_-]{1,128}$';
const idRe = new RegExp(ID_PATTERN);
export const isValidId = (s: string): boolean => idRe.test(s);

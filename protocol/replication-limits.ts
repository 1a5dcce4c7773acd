/**
 * The replication simulator's input bounds as plain numbers: what a request may carry. The TypeBox
 * schemas in replication.ts enforce them at the HTTP edge (a 400 naming the field and the bound);
 * src/replication/limits.ts re-exports them beside every other limit of the service. Constants only:
 * no imports, so node workers can load it without TypeBox.
 */

/** Longest key, in characters (UTF-16 code units, JavaScript string length); longer is a 400. */
export const keyCharsMax = 1024;
/**
 * Longest value, in characters; longer is a 400. The 1 MiB body cap (413) comes first for values
 * of multi-byte characters, so the largest storable value in bytes is a little under 1 MiB.
 */
export const valueCharsMax = 512 * 1024;
/** Longest client id (body `client_id`, query `client_id`), in characters; longer is a 400. */
export const clientIdCharsMax = 256;
/** Longest node id in a body or query (`target_node_id`, `node_id`, `from`, `to`, groups); longer is a 400. */
export const nodeIdCharsMax = 64;
/** Most entries in one write-batch; more is a 400. */
export const batchEntriesMax = 1000;
/** Most nodes listed in one partition group; more is a 400 (a cluster has at most 64 nodes). */
export const partitionGroupNodesMax = 64;
/** Largest physical-clock offset a node can be given, ms, either way (ClockSkewRequest); more is a 400. */
export const clockSkewMsMax = 86_400_000;
/** Largest one-way link latency (LatencyRequest) and inter-region latency, ms; more is a 400. */
export const latencyMsMax = 60_000;
/** Longest cluster id in a query (`/ws?cluster_id=`); ids are UUIDs (36). Longer is a 400. */
export const clusterIdCharsMax = 64;

/**
 * What the user has picked on the replication page (cluster, nodes, link) and the last fault
 * message, as signals shared by the page's views. Page state only: the clusters themselves live in
 * the store's model.
 */
import { signal, type Signal } from '@preact/signals';

export const selectedCluster: Signal<string | null> = signal(null);
export const selectedNodes: Signal<readonly string[]> = signal([]);
export const chosenLink: Signal<readonly [string, string] | null> = signal(null);
export const faultMessage: Signal<{ text: string; error: boolean } | null> = signal(null);

/** An API path under one cluster. */
export const cpath = (cid: string, rest = ''): string => `/api/v1/clusters/${encodeURIComponent(cid)}${rest}`;

/** Click selects one node (again: none); shift-click adds it to the selection or takes it out. */
export function selectNode(id: string, additive: boolean): void {
  const cur = selectedNodes.value;
  if (additive) selectedNodes.value = cur.includes(id) ? cur.filter((x) => x !== id) : [...cur, id];
  else selectedNodes.value = cur.length === 1 && cur[0] === id ? [] : [id];
}

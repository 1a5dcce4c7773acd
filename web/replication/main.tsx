/**
 * Entry of the replication simulator's page (bundled by scripts/build-web.mjs): starts the store's
 * one WebSocket and renders the app. Nothing else happens at load. The same bundle is the message
 * flow's worker (flow.tsx starts it from this file's URL): run with no document, it only paints.
 */
import { render } from 'preact';
import '../shared/common.css';
import './replication.css';
import { App } from './app.js';
import { runFlowWorker } from './flow-paint.js';
import { ReplicationStore } from './store.js';

if (typeof document === 'undefined') runFlowWorker(self as unknown as Parameters<typeof runFlowWorker>[0]);
else {
  const store = new ReplicationStore();
  store.start();
  const root = document.getElementById('app');
  if (root) render(<App store={store} />, root);
}

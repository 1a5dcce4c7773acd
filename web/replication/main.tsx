/**
 * Entry of the replication simulator's page (bundled by scripts/build-web.mjs): starts the store's
 * one WebSocket and renders the app. Nothing else happens at load.
 */
import { render } from 'preact';
import '../shared/common.css';
import './replication.css';
import { App } from './app.js';
import { ReplicationStore } from './store.js';

const store = new ReplicationStore();
store.start();
const root = document.getElementById('app');
if (root) render(<App store={store} />, root);

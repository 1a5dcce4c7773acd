/**
 * Entry of the clock lab's page (bundled by scripts/build-web.mjs, served by the lab's proxy):
 * starts the store's one WebSocket and renders the app. Nothing else happens at load.
 */
import { render } from 'preact';
import '../shared/common.css';
import './clocklab.css';
import { App } from './app.js';
import { LabStore } from './store.js';

const store = new LabStore();
store.start();
const root = document.getElementById('app');
if (root) render(<App store={store} />, root);

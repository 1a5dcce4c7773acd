/**
 * Entry of the feature-flags console (bundled by scripts/build-web.mjs): creates the store and
 * renders the app. Nothing is fetched until the user signs in; tokens live only in memory.
 */
import { render } from 'preact';
import '../shared/common.css';
import './flags.css';
import { App } from './app.js';
import { FlagsStore } from './store.js';

const store = new FlagsStore();
const root = document.getElementById('app');
if (root) render(<App store={store} />, root);

/**
 * The flag SDK in one import: the streaming client with local evaluation, the OpenFeature server
 * provider, and the SSE parser. Re-exports only.
 */
export { FlagsClient, type FlagsClientOptions, type FlagChange, type ClientState } from './client.js';
export { SimlabFlagsProvider, toEvalContext } from './provider.js';
export { SseParser, type SseEvent } from './sse.js';

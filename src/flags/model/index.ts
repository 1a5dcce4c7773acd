/**
 * The flag data model in one import: types, TypeBox body schemas, normalization, validation and
 * body decoding. Re-exports only; no logic lives here.
 */
export * from './types.js';
export * from './schemas.js';
export * from './validate.js';
export * from './decode.js';

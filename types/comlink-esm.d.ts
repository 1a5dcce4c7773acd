declare module 'comlink/dist/esm/comlink.mjs' {
  export * from 'comlink';
}

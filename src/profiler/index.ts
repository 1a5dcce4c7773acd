/**
 * The profiler's public surface: `startProfiler(addr, logger)` for the service entry points, and
 * the address/seconds decoders it uses. Nothing here starts on import.
 */
export {
  isLoopbackHost,
  parseProfileSeconds,
  parseProfilerAddr,
  profileSecondsDefault,
  profileSecondsMax,
  profileSecondsMin,
  startProfiler,
  type ProfilerAddr,
  type ProfilerHandle,
} from './server.js';

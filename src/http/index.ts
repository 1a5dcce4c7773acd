/**
 * Public face of the HTTP adapter: services import from here and never from uWebSockets.js.
 */
export { HttpApp } from './app.js';
export { HttpError } from './errors.js';
export { bodyLimitBytesDefault } from './body.js';
export type {
  HttpRequest,
  HttpResult,
  Handler,
  RouteOptions,
  HttpAppOptions,
  CorsOptions,
  HandlerErrorKind,
} from './types.js';
export type { ServerStream, StreamHandler } from './stream.js';
export { WsClient, WsHub, type WsHubOptions } from './ws.js';
export type { WsBehavior, UpgradeInfo, UpgradeDecision, SendOutcome } from './ws.js';
export { formatValidationError, fieldName } from './validation.js';
export type { Method } from './router.js';
export { healthRoutes, faultMetrics } from './health.js';
export { jsonNestingDepthMax, jsonValuesMax, jsonShapeProblem } from './json-limits.js';

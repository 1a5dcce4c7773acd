/**
 * The baseline for HTTP benchmarks: a bare uWebSockets.js hello-world (no routing, no JSON),
 * the fastest this machine serves HTTP with the same library. Prints {"port": N}.
 */
import uWS from 'uWebSockets.js';

const app = uWS.App();
app.any('/*', (res) => {
  res.cork(() => res.writeHeader('content-type', 'application/json').end('{"hello":"world"}'));
});
app.listen('127.0.0.1', Number(process.env['HELLO_PORT'] ?? 0), (sock) => {
  if (!sock) process.exit(1);
  console.log(JSON.stringify({ port: uWS.us_socket_local_port(sock) }));
});

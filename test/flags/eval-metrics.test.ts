// flags_http_requests_total after issue 20: counted in plain maps on the hot path (no prom-client
// call per request) and copied into the registry when scraped, with the same names, labels and
// totals as before; scraping twice never counts a response twice.
import t from 'tap';
import { createMetrics } from '../../src/flags/api/metrics.js';

type Parts = Parameters<typeof createMetrics>[0];

t.test('responses are counted by method and status, and each scrape adds only what is new', async (t) => {
  // Only flags_http_requests_total is scraped here, so the other metrics' sources are never read.
  const metrics = createMetrics({ feedPosition: () => 0 } as unknown as Parts);
  const scrape = async () => metrics.registry.getSingleMetricAsString('flags_http_requests_total');
  for (let i = 0; i < 3; i++) metrics.countResponse('POST', 200);
  metrics.countResponse('GET', 404);
  const first = await scrape();
  t.match(first, /flags_http_requests_total\{method="POST",status="200"\} 3\n/, 'three POST 200');
  t.match(first, /flags_http_requests_total\{method="GET",status="404"\} 1/, 'one GET 404');
  t.match(await scrape(), /\{method="POST",status="200"\} 3\n/, 'a second scrape with nothing new changes nothing');
  metrics.countResponse('POST', 200);
  metrics.countResponse('DELETE', 204);
  const third = await scrape();
  t.match(third, /\{method="POST",status="200"\} 4\n/, 'a later response adds one');
  t.match(third, /\{method="DELETE",status="204"\} 1/, 'a new method and status appear');
});

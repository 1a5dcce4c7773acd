#!/usr/bin/env node
// simlab-swarm: the seeded swarm's command line, run from the build (npx tsc -p tsconfig.json).
// Usage and exit codes: simlab-swarm --help (src/replication/swarm/cli.ts, which runs on import).
import '../dist/src/replication/swarm/cli.js';

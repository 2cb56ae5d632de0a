// Placeholder until the CLI lands: say honestly that there is nothing to run yet.
process.stdout.write("baton: the CLI is not built yet; `npm test` runs the foundation's test suite.\n")

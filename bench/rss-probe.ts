/**
 * `node --require rss-probe.js …`: says the process's peak RSS on stderr as it exits, for `npm run bench` on machines
 * without /usr/bin/time.
 */
process.on('exit', () => {
  process.stderr.write(`\nforgewarden-bench-max-rss=${process.resourceUsage().maxRSS * 1024}\n`);
});

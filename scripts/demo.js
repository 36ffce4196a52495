#!/usr/bin/env node
// The quick start: the sandbox forge with its demo world, and the daemon running config/demo.yml against it.
// Ctrl-C stops both. Needs a Redis at REDIS_URL (default redis://127.0.0.1:6379) and a build (`npm run demo` builds).
'use strict';
const { spawn } = require('node:child_process');
const { resolve } = require('node:path');

const cli = resolve(__dirname, '../dist/main.js');
const port = process.env.SANDBOX_PORT || '9480';
const env = {
  ...process.env,
  GITLAB_URL: `http://127.0.0.1:${port}`,
  GITLAB_TOKEN: 'glpat-sandbox-admin-token',
  LOG_FORMAT: process.env.LOG_FORMAT || 'pretty',
};

const children = [];
function start(args) {
  const child = spawn(process.execPath, [cli, ...args], { env, stdio: 'inherit' });
  children.push(child);
  child.on('exit', (code) => {
    if (!stopping) {
      console.error(`forgewarden ${args[0]} exited with ${code}; stopping the demo`);
      stop(code || 1);
    }
  });
  return child;
}

let stopping = false;
function stop(code) {
  stopping = true;
  for (const child of children) if (child.exitCode === null) child.kill('SIGTERM');
  Promise.all(children.map((child) => new Promise((done) => (child.exitCode === null ? child.on('exit', done) : done())))).then(
    () => process.exit(code),
  );
}
process.on('SIGINT', () => stop(0));
process.on('SIGTERM', () => stop(0));

start(['sandbox', '--port', port]);
// Give the sandbox a moment to listen before the daemon's first poll.
setTimeout(() => start(['run', '-c', resolve(__dirname, '../config/demo.yml')]), 500);

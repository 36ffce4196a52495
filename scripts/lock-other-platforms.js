#!/usr/bin/env node
// Completes package-lock.json with entries for other platforms' optional native binaries (msgpackr-extract for
// Bull, unrs-resolver for jest). A registry mirror that serves only this platform's binaries makes npm leave them
// out of the lock, and `npm ci` then refuses the lock as out of sync. Each entry names its os/cpu, so npm skips it
// on every other platform without fetching it. Run after regenerating the lockfile from scratch; `npm install`
// keeps the entries afterwards.
'use strict';
const fs = require('fs');
const lock = JSON.parse(fs.readFileSync('package-lock.json', 'utf8'));
const OS = {
  darwin: 'darwin',
  linux: 'linux',
  win32: 'win32',
  android: 'android',
  freebsd: 'freebsd',
  openharmony: 'openharmony',
  sunos: 'sunos',
  aix: 'aix',
};
const CPUS = ['arm64', 'x64', 'ia32', 'arm', 'loong64', 'ppc64', 'riscv64', 's390x', 'wasm32'];
let added = 0;
for (const [path, entry] of Object.entries(lock.packages)) {
  for (const [name, version] of Object.entries(entry.optionalDependencies || {})) {
    const key = `node_modules/${name}`;
    if (lock.packages[key]) continue;
    const base = name.split('/').pop();
    const os = Object.keys(OS).find((o) => base.includes(`-${o}-`));
    const cpu = CPUS.find((c) => new RegExp(`-${c}(-|$)`).test(base));
    const stub = { version, optional: true };
    if (os) stub.os = [os];
    if (cpu) stub.cpu = [cpu];
    if (/-(gnu|gnueabihf|msvc|musl|musleabihf)$/.test(base)) {
      const libc =
        base.endsWith('musl') || base.endsWith('musleabihf') ? 'musl' : base.endsWith('msvc') ? null : 'glibc';
      if (libc) stub.libc = [libc];
    }
    lock.packages[key] = stub;
    added++;
  }
}
fs.writeFileSync('package-lock.json', JSON.stringify(lock, null, 2) + '\n');
console.log(`added ${added} entries`);

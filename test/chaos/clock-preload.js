'use strict';
// Loaded into each daemon of the chaos suite with `node --require`. The suite moves the sandbox forge's clock an hour
// at a time (the forge allows one bulk tag deletion an hour per repository, key rotation waits out a grace period),
// and the daemons must see the same time, or the hourly ledger and the grace period would never end within the
// suite's few minutes. The daemon itself is not changed for this: Date is shifted here, from the outside.
//
// The offset (milliseconds to add to the real time) is read from the file named by FORGEWARDEN_CHAOS_CLOCK_FILE. It is
// checked at most every 25 ms, from inside Date.now(), and read only when the file's mtime or size changed: one stat
// call per 25 ms at most. The short period keeps the moment after a step, when the forge is already an hour on and
// the daemon not yet, too short for a request to fall into. Timers (setTimeout) keep running on real time; only what
// Date says moves.

const { readFileSync, statSync } = require('node:fs');

const file = process.env.FORGEWARDEN_CHAOS_CLOCK_FILE;
if (file) {
  const RealDate = Date;
  const realNow = RealDate.now.bind(RealDate);
  const RECHECK_MS = 25;
  let offset = 0;
  let checkedAt = -Infinity;
  let seen = '';

  const reload = () => {
    checkedAt = realNow();
    try {
      const stat = statSync(file);
      const version = `${stat.mtimeMs}:${stat.size}`;
      if (version === seen) return;
      const value = Number(readFileSync(file, 'utf8').trim());
      // A half-written file (the suite renames a complete one into place, so this is only a safeguard) is ignored.
      if (Number.isFinite(value)) {
        offset = value;
        seen = version;
      }
    } catch {
      // The file is missing for a moment: keep the last offset.
    }
  };

  const shiftedNow = () => {
    if (realNow() - checkedAt >= RECHECK_MS) reload();
    return realNow() + offset;
  };

  // A function, not a class: `Date()` called without `new` must still return a string, and `new Date(...)` with
  // arguments must behave exactly as before. The prototype is shared, so `instanceof Date` holds for every date.
  function ShiftedDate(...args) {
    if (!new.target) return new RealDate(shiftedNow()).toString();
    return Reflect.construct(RealDate, args.length === 0 ? [shiftedNow()] : args, new.target);
  }
  ShiftedDate.prototype = RealDate.prototype;
  Object.defineProperty(RealDate.prototype, 'constructor', { value: ShiftedDate, writable: true, configurable: true });
  ShiftedDate.now = shiftedNow;
  ShiftedDate.parse = RealDate.parse;
  ShiftedDate.UTC = RealDate.UTC;
  Object.defineProperty(ShiftedDate, 'name', { value: 'Date' });
  globalThis.Date = ShiftedDate;
  reload();
}

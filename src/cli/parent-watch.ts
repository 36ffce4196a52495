/**
 * Calls `onGone` once when the process that started this one is gone. A process whose parent dies is handed to init
 * (or a subreaper), so its parent pid changes; polling that needs no IPC channel and no help from the parent. npm, for
 * one, may die without passing a signal on, and a daemon left behind then runs unsupervised, holding its port.
 *
 * Returns a function that stops watching. The timer never keeps the process alive on its own.
 */
export function watchParent(
  onGone: () => void,
  options: { intervalMs?: number; parentPid?: () => number } = {},
): () => void {
  const parentPid = options.parentPid ?? (() => process.ppid);
  const first = parentPid();
  // Started by init, or already orphaned: there is no parent whose end could be told.
  if (first <= 1) return () => undefined;
  const timer = setInterval(() => {
    if (parentPid() === first) return;
    clearInterval(timer);
    onGone();
  }, options.intervalMs ?? 1_000);
  timer.unref();
  return () => clearInterval(timer);
}

/** Whether npm (or another npm-compatible runner) started this process through a package script such as `npm start`. */
export function startedByPackageScript(env: NodeJS.ProcessEnv): boolean {
  return Boolean(env.npm_lifecycle_event);
}

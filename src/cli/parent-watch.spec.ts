import { startedByPackageScript, watchParent } from './parent-watch';

describe('watchParent', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('calls back once when the parent pid changes, and not before', () => {
    let ppid = 4242;
    const gone = jest.fn();
    watchParent(gone, { intervalMs: 1_000, parentPid: () => ppid });
    jest.advanceTimersByTime(5_000);
    expect(gone).not.toHaveBeenCalled();
    ppid = 1;
    jest.advanceTimersByTime(1_000);
    expect(gone).toHaveBeenCalledTimes(1);
    ppid = 7;
    jest.advanceTimersByTime(5_000);
    expect(gone).toHaveBeenCalledTimes(1);
  });

  it('stops watching when told to', () => {
    let ppid = 4242;
    const gone = jest.fn();
    const stop = watchParent(gone, { intervalMs: 1_000, parentPid: () => ppid });
    stop();
    ppid = 1;
    jest.advanceTimersByTime(5_000);
    expect(gone).not.toHaveBeenCalled();
  });

  it('does nothing for a process started by init', () => {
    let ppid = 1;
    const gone = jest.fn();
    watchParent(gone, { intervalMs: 1_000, parentPid: () => ppid });
    ppid = 99;
    jest.advanceTimersByTime(5_000);
    expect(gone).not.toHaveBeenCalled();
  });
});

describe('startedByPackageScript', () => {
  it('tells npm start from a direct start', () => {
    expect(startedByPackageScript({ npm_lifecycle_event: 'start' })).toBe(true);
    expect(startedByPackageScript({})).toBe(false);
  });
});

import { maskProblem } from './masked-values';

describe('maskProblem (the forge’s Ci::Maskable)', () => {
  it.each([
    ['glpat-Ab_9-xY/z+=@:.~', false, undefined],
    ['12345678', false, undefined],
    ['1234567', false, 'it must be at least 8 characters'],
    ['line one\nline two', false, 'it must be a single line'],
    ['with a space', false, 'it must not contain spaces'],
    ['pipe|char|acters', false, 'it may contain only letters, digits and _+=/@:.~- (unless raw)'],
    ['pipe|char|acters', true, undefined],
    ['raw with space', true, 'it must not contain spaces'],
    ['tab\tinside-raw', true, 'it must not contain spaces'],
  ])('%j (raw %s): %s', (value, raw, problem) => {
    expect(maskProblem(value, raw)).toBe(problem);
  });
});

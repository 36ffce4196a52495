/** `count(1, 'project')` → `1 project`, `count(3, 'policy', 'policies')` → `3 policies`. */
export function count(n: number, word: string, plural = `${word}s`): string {
  return `${n} ${n === 1 ? word : plural}`;
}

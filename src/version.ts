// Read at run time so the version has one source: package.json (two levels up from both src/ and dist/).
// eslint-disable-next-line @typescript-eslint/no-require-imports
export const VERSION: string = (require('../package.json') as { version: string }).version;

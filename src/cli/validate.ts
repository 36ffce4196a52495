import { configPath, EXIT_INVALID_CONFIG, loadOrReport } from './config-file';

export function validateCommand(options: { config?: string }): number {
  const file = configPath(options.config);
  const config = loadOrReport(file);
  if (!config) return EXIT_INVALID_CONFIG;
  const count = config.policies.length;
  process.stdout.write(`${file}: valid, ${count} polic${count === 1 ? 'y' : 'ies'}\n`);
  return 0;
}

#!/usr/bin/env node
import 'reflect-metadata';
import { Command } from 'commander';
import { auditCommand } from './cli/audit';
import { onceCommand } from './cli/once';
import { planCommand } from './cli/plan';
import { runCommand } from './cli/run';
import { sandboxCommand } from './cli/sandbox';
import { schemaCommand } from './cli/schema';
import { validateCommand } from './cli/validate';
import { VERSION } from './version';

const program = new Command('forgewarden')
  .description('Applies policies written in YAML to a GitLab-compatible forge.')
  .version(VERSION)
  .showHelpAfterError();

const configOption = ['-c, --config <file>', 'policy file (default: $FORGEWARDEN_CONFIG or config/policies.yml)'] as const;

program
  .command('validate')
  .description('check a policy file; prints each problem as FILE:LINE:COL key.path: message (exit 2 when invalid)')
  .option(...configOption)
  .action((options: { config?: string }) => {
    process.exitCode = validateCommand(options);
  });

program
  .command('schema')
  .description('print the JSON Schema of the policy file, for editor completion')
  .action(() => {
    process.exitCode = schemaCommand();
  });

program
  .command('run')
  .description('run the daemon until SIGTERM or SIGINT')
  .option(...configOption)
  .action(async (options: { config?: string }) => {
    process.exitCode = await runCommand(options);
  });

program
  .command('plan')
  .description('one observe and decide pass of every policy; prints each decision and its reason, changes nothing')
  .option(...configOption)
  .option('--policy <name>', 'only this policy')
  .option('--json', 'print JSON instead of a table')
  .action(async (options: { config?: string; policy?: string; json?: boolean }) => {
    process.exitCode = await planCommand(options);
  });

program
  .command('once')
  .description('one acting pass of every policy, then exit (for cron or CI)')
  .option(...configOption)
  .option('--policy <name>', 'only this policy')
  .action(async (options: { config?: string; policy?: string }) => {
    process.exitCode = await onceCommand(options);
  });

program
  .command('audit')
  .description('recent actions and would-be actions from the audit trail')
  .option(...configOption)
  .option('--since <duration>', 'how far back', '24h')
  .option('--json', 'print JSON instead of a table')
  .action(async (options: { config?: string; since: string; json?: boolean }) => {
    process.exitCode = await auditCommand(options);
  });

program
  .command('sandbox')
  .description('serve the simulated forge API over in-memory state, seeded from a world file')
  .option('-p, --port <port>', 'port to listen on (0 picks a free one)', '9480')
  .option('--host <host>', 'address to bind; the control API has no authentication', '127.0.0.1')
  .option('-w, --world <file>', 'world file (default: config/sandbox/demo-world.yml)')
  .action(async (options: { port: string; host: string; world?: string }) => {
    process.exitCode = await sandboxCommand(options);
  });

program.parseAsync(process.argv).then(
  // Connections are closed by now; exiting explicitly ends any straggling timer of a library.
  () => process.exit(process.exitCode ?? 0),
  (error: unknown) => {
    process.stderr.write(`forgewarden: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);

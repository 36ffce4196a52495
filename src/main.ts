#!/usr/bin/env node
import { Command, CommanderError } from 'commander';
import { EXIT_USAGE, logSettingsProblem } from './cli/usage';
import { VERSION } from './version';

// Each command loads its own code when it runs: `validate`, `schema` and `--version` start without Nest, Bull,
// Redis or the sandbox, and the daemon's start pays only for what it uses.

/** A usage error of ours (not commander's), whose one line main prints itself. */
const USAGE_ERROR = 'forgewarden.usage';

const program = new Command('forgewarden')
  .description('Applies policies written in YAML to a GitLab-compatible forge.')
  .version(VERSION)
  .showHelpAfterError()
  // Usage errors (an unknown option, a missing argument) exit 2 like an invalid file, never 1 like a failed pass.
  .exitOverride()
  // A bad LOG_LEVEL or LOG_FORMAT is the same mistake in every command, so every command says it the same way.
  .hook('preAction', () => {
    const problem = logSettingsProblem(process.env);
    if (problem) throw new CommanderError(EXIT_USAGE, USAGE_ERROR, `error: ${problem}`);
  });

const configOption = [
  '-c, --config <file>',
  'policy file (default: $FORGEWARDEN_CONFIG or config/policies.yml)',
] as const;

/**
 * `--dry-run` and `--no-dry-run`, which share one value: given together, commander would keep the last one silently,
 * so the pair is a usage error (exit 2) before the command starts.
 */
function withDryRunOptions(command: Command): Command {
  const given = new Set<string>();
  return command
    .option('--dry-run', 'record what would be done and change nothing, whatever the file says')
    .option('--no-dry-run', 'act, whatever the file says')
    .on('option:dry-run', () => given.add('--dry-run'))
    .on('option:no-dry-run', () => given.add('--no-dry-run'))
    .hook('preAction', () => {
      if (given.size > 1)
        throw new CommanderError(EXIT_USAGE, USAGE_ERROR, 'error: --dry-run and --no-dry-run cannot be used together');
    });
}

program
  .command('validate')
  .description(
    'check policy files; prints each problem as FILE:LINE:COL key.path: message (exit 2 when one is invalid)',
  )
  .argument('[files...]', 'policy files (default: -c FILE, $FORGEWARDEN_CONFIG or config/policies.yml)')
  .option(...configOption)
  .option(
    '--no-env',
    'without the environment: every ${VAR} is taken as set, and only the checks of its value are skipped',
  )
  .action(async (files: string[], options: { config?: string; env?: boolean }) => {
    const { validateCommand } = await import('./cli/validate');
    process.exitCode = validateCommand(files, options);
  });

program
  .command('doctor')
  .description(
    "check Redis, the forge, the token and every policy's targets; one line per check (exit 1 on a failed check)",
  )
  .option(...configOption)
  .action(async (options: { config?: string }) => {
    const { doctorCommand } = await import('./cli/doctor');
    process.exitCode = await doctorCommand(options);
  });

program
  .command('schema')
  .description('print the JSON Schema of the policy file, for editor completion')
  .option('--tests', 'the JSON Schema of policy test files (*.test.yml) instead')
  .action(async (options: { tests?: boolean }) => {
    const { schemaCommand } = await import('./cli/schema');
    process.exitCode = schemaCommand(options);
  });

program
  .command('run')
  .description('run the daemon until SIGTERM or SIGINT')
  .option(...configOption)
  .option(
    '--http-port <port>',
    'serve health, metrics, the console and webhooks on this port instead of http.port (0 turns HTTP off)',
  )
  .action(async (options: { config?: string; httpPort?: string }) => {
    const { runCommand } = await import('./cli/run');
    process.exitCode = await runCommand(options);
  });

program
  .command('test')
  .description(
    'run policy tests: each decides, against a recorded or written world and at a fixed time, what it expects (exit 1 when one does not, 2 on a broken file)',
  )
  .argument(
    '[paths...]',
    'test files, or folders of *.test.yml (default: the test file beside the policy file, e.g. config/policies.test.yml)',
  )
  .option(...configOption)
  .option('--junit <file>', 'also write a JUnit XML report (for artifacts:reports:junit in GitLab CI)')
  .option('--json', 'print JSON instead of one line per test')
  .action(async (paths: string[], options: { config?: string; junit?: string; json?: boolean }) => {
    const { testCommand } = await import('./cli/test');
    process.exitCode = await testCommand(paths, options);
  });

program
  .command('record')
  .description(
    'record, read-only, what one policy reads from the forge as a world file for `test` and `sandbox --world`, without secrets; prints a test of what it decides on it',
  )
  .option(...configOption)
  .requiredOption('--policy <name>', 'the policy whose reads are recorded')
  .requiredOption('-o, --out <file>', 'the world file to write')
  .option('--max-projects <n>', 'at most this many projects (a glob over more records the first ones)', '100')
  .option(
    '--anonymize',
    "replace people's names and the part of their emails before the @ (usernames and mail domains stay: rules match them)",
  )
  .action(
    async (options: { config?: string; policy: string; out: string; maxProjects: string; anonymize?: boolean }) => {
      const { recordCommand } = await import('./cli/record');
      process.exitCode = await recordCommand(options);
    },
  );

const plan = program
  .command('plan')
  .description('one observe and decide pass of every policy; prints each decision and its reason, changes nothing')
  .option(...configOption)
  .option('--policy <name>', 'only this policy')
  .option('--json', 'print JSON instead of a table');
withDryRunOptions(plan)
  .option('--exit-code', 'exit 3 when at least one action would be taken, 0 when none')
  .action(
    async (options: { config?: string; policy?: string; json?: boolean; dryRun?: boolean; exitCode?: boolean }) => {
      const { planCommand } = await import('./cli/plan');
      process.exitCode = await planCommand(options);
    },
  );

const once = program
  .command('once')
  .description('one acting pass of every policy, then exit (for cron or CI)')
  .option(...configOption)
  .option('--policy <name>', 'only this policy')
  .option('--json', 'print JSON instead of a summary');
withDryRunOptions(once).action(
  async (options: { config?: string; policy?: string; json?: boolean; dryRun?: boolean }) => {
    const { onceCommand } = await import('./cli/once');
    process.exitCode = await onceCommand(options);
  },
);

const restore = program
  .command('restore')
  .description(
    "create a group from a backup archive through the forge's group import, or a group and its projects from a backup set's folder (dry run unless --no-dry-run or dry_run: false)",
  )
  .option(...configOption)
  .option(
    '--from <path>',
    "a group archive (a set's group.tar.gz, or GROUP_PATH/YYYY-MM-DDTHHMMSSZ.tar.gz of before sets), or a backup set's folder (GROUP_PATH/YYYY-MM-DDTHHMMSSZ/, with set.json)",
  )
  .option(
    '--group <path>',
    'the path of the group to create: a slug (under --parent-id when given) or a full path whose parent exists',
  )
  .option('--name <name>', "the new group's name (default: the last segment of --group)")
  .option('--parent-id <id>', 'the id of the parent group')
  .option(
    '--project <path>',
    'from a set: only this project (its path relative to the group, as set.json lists it, e.g. platform/api), into the existing group --group',
  )
  .option(
    '--wait <seconds>',
    'how long to wait for the forge to create the group, and from a set for its subgroups and each project import',
    '600',
  );
withDryRunOptions(restore).action(
  async (options: {
    config?: string;
    from?: string;
    group?: string;
    name?: string;
    parentId?: string;
    project?: string;
    wait?: string;
    dryRun?: boolean;
  }) => {
    const { restoreCommand } = await import('./cli/restore');
    process.exitCode = await restoreCommand(options);
  },
);

program
  .command('audit')
  .description('recent actions and would-be actions from the audit trail')
  .option(...configOption)
  .option('--since <duration>', 'how far back', '24h')
  .option('--json', 'print JSON instead of a table')
  .action(async (options: { config?: string; since: string; json?: boolean }) => {
    const { auditCommand } = await import('./cli/audit');
    process.exitCode = await auditCommand(options);
  });

program
  .command('pause')
  .description('stop every replica from starting actions for a policy (passes still observe and decide) until resumed')
  .argument('<policy>', "the policy's name")
  .option(...configOption)
  .option('--reason <text>', 'why: shown in the console and the audit trail')
  .action(async (policy: string, options: { config?: string; reason?: string }) => {
    const { pauseCommand } = await import('./cli/pause');
    process.exitCode = await pauseCommand(policy, options);
  });

program
  .command('resume')
  .description('let a paused policy act again, on every replica')
  .argument('<policy>', "the policy's name")
  .option(...configOption)
  .action(async (policy: string, options: { config?: string }) => {
    const { resumeCommand } = await import('./cli/pause');
    process.exitCode = await resumeCommand(policy, options);
  });

withDryRunOptions(
  program
    .command('clear')
    .description(
      "remove every key under the file's redis.prefix: its records, schedules, queues and audit trail (dry run unless --no-dry-run or dry_run: false; refused while a daemon uses them)",
    )
    .option(...configOption),
).action(async (options: { config?: string; dryRun?: boolean }) => {
  const { clearCommand } = await import('./cli/clear');
  process.exitCode = await clearCommand(options);
});

const hooks = program
  .command('hooks')
  .description("the daemon's webhook on every project a policy takes events for: install, list or remove it");
for (const [action, description] of [
  ['install', 'create or update the webhook on every covered project (dry run unless --no-dry-run or dry_run: false)'],
  ['list', 'show the webhook of every covered project and whether the forge disabled it'],
  ['remove', 'delete the webhook from every covered project (dry run unless --no-dry-run or dry_run: false)'],
] as const) {
  const command = hooks
    .command(action)
    .description(description)
    .option(...configOption)
    .requiredOption(
      '--url <url>',
      "the daemon's webhook URL as the forge reaches it, such as https://forgewarden.example.com/webhooks/gitlab",
    );
  if (action !== 'list') withDryRunOptions(command);
  if (action === 'install')
    command.option(
      '--reset-token',
      'also give hooks already in place the secret token of the file (after changing it)',
    );
  command.action(async (options: { config?: string; url: string; dryRun?: boolean; resetToken?: boolean }) => {
    const { hooksCommand } = await import('./cli/hooks');
    process.exitCode = await hooksCommand(action, options);
  });
}

program
  .command('sandbox')
  .description('serve the simulated forge API over in-memory state, seeded from a world file')
  .option('-p, --port <port>', 'port to listen on (0 picks a free one)', '9480')
  .option('--host <host>', 'address to bind; the control API has no authentication', '127.0.0.1')
  .option('-w, --world <file>', 'world file (default: config/sandbox/demo-world.yml)')
  .action(async (options: { port: string; host: string; world?: string }) => {
    const { sandboxCommand } = await import('./cli/sandbox');
    process.exitCode = await sandboxCommand(options);
  });

/**
 * Exits once what was written to stdout and stderr is out: to a pipe Node writes asynchronously, and process.exit()
 * right away would cut off a long answer (`schema | wc -c` stopped at 64 KiB).
 */
function exitAfterOutput(code: number): void {
  process.exitCode = code;
  let pending = 2;
  const done = (): void => {
    if (--pending === 0) process.exit(code);
  };
  for (const stream of [process.stdout, process.stderr]) {
    // An empty write's callback runs after everything written before it.
    if (stream.writableLength === 0) done();
    else stream.write('', done);
  }
}

program.parseAsync(process.argv).then(
  // Connections are closed by now; exiting explicitly ends any straggling timer of a library.
  () => exitAfterOutput(Number(process.exitCode ?? 0)),
  (error: unknown) => {
    if (error instanceof CommanderError) {
      // Help and --version "fail" with exit code 0; commander has printed the message (and the help) already,
      // except for ours.
      if (error.code === USAGE_ERROR) process.stderr.write(`${error.message}\n`);
      exitAfterOutput(error.exitCode === 0 ? 0 : EXIT_USAGE);
      return;
    }
    // A bug, not an expected failure: one line, and the stack only when asked for.
    const debug = /^(debug|verbose)$/i.test(process.env.LOG_LEVEL ?? '');
    process.stderr.write(
      `forgewarden: ${error instanceof Error ? ((debug ? error.stack : undefined) ?? error.message) : String(error)}\n`,
    );
    exitAfterOutput(1);
  },
);

import { relative } from 'node:path';
import { DEMO_WORLD_PATH, startSandbox, WorldError } from '../sandbox';
import { parsePort, portProblem } from './ports';
import { StopSignals } from './stop-signals';

/** Serves the simulated forge until SIGTERM or SIGINT. */
export async function sandboxCommand(options: { port: string; host: string; world?: string }): Promise<number> {
  const port = parsePort('--port', options.port);
  if (typeof port === 'string') {
    process.stderr.write(`forgewarden sandbox: ${port}\n`);
    return 2;
  }
  const world = options.world ?? DEMO_WORLD_PATH;
  // From the first moment: a Ctrl-C while the world loads ends the sandbox as cleanly as one later.
  const signals = new StopSignals(() => process.exit(1));
  let sandbox;
  try {
    sandbox = await startSandbox({ port, host: options.host, world });
  } catch (error) {
    if (error instanceof WorldError) {
      process.stderr.write(`${error.message}\n`);
      return 2;
    }
    const taken = portProblem(error, options.host, port, '--port N (0 picks a free one)');
    process.stderr.write(`forgewarden sandbox: ${taken ?? (error instanceof Error ? error.message : String(error))}\n`);
    return taken ? 2 : 1;
  }
  const { users, groups, projects } = sandbox.state;
  process.stdout.write(
    `sandbox forge on ${sandbox.url}/api/v4 (control API: ${sandbox.url}/__sandbox)\n` +
      `world ${relative(process.cwd(), world) || world}: ${users.size} users, ${groups.size} groups, ${projects.size} projects; tokens are in the world file\n`,
  );
  await signals.requested;
  await sandbox.close();
  process.stdout.write('sandbox stopped\n');
  return 0;
}

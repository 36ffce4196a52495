import { relative } from 'node:path';
import { DEMO_WORLD_PATH, startSandbox, WorldError } from '../sandbox';

/** Serves the simulated forge until SIGTERM or SIGINT. */
export async function sandboxCommand(options: { port: string; host: string; world?: string }): Promise<number> {
  const port = Number(options.port);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    process.stderr.write(`forgewarden sandbox: --port must be a whole number from 0 to 65535 (got "${options.port}")\n`);
    return 2;
  }
  const world = options.world ?? DEMO_WORLD_PATH;
  let sandbox;
  try {
    sandbox = await startSandbox({ port, host: options.host, world });
  } catch (error) {
    if (error instanceof WorldError) {
      process.stderr.write(`${error.message}\n`);
      return 2;
    }
    process.stderr.write(`forgewarden sandbox: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
  const { users, groups, projects } = sandbox.state;
  process.stdout.write(
    `sandbox forge on ${sandbox.url}/api/v4 (control API: ${sandbox.url}/__sandbox)\n` +
      `world ${relative(process.cwd(), world) || world}: ${users.size} users, ${groups.size} groups, ${projects.size} projects; tokens are in the world file\n`,
  );
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  await sandbox.close();
  return 0;
}

import { createServer } from 'node:net';

/** A port given on the command line: a whole number from 0 to 65535, else what is wrong with it. */
export function parsePort(option: string, text: string): number | string {
  const port = Number(text);
  if (!/^\d+$/.test(text) || port > 65_535) return `${option} must be a whole number from 0 to 65535 (got "${text}")`;
  return port;
}

/**
 * The one line a listener that could not start says, naming the port and how to choose another (`choose`), or
 * undefined when the failure is not about the port. A taken port is a usage error: nothing waiting mends it.
 */
export function portProblem(error: unknown, host: string, port: number, choose: string): string | undefined {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'EADDRINUSE')
    return `port ${port} on ${host} is taken by another process; choose another with ${choose}`;
  if (code === 'EACCES')
    return `port ${port} on ${host} needs privileges this process does not have; choose one above 1023 with ${choose}`;
  if (code === 'EADDRNOTAVAIL') return `${host} is no address of this machine, so port ${port} cannot be served there`;
  return undefined;
}

/** Listens on `host:port` and closes again: whether it could, or the error that says why not. */
export function tryListen(host: string, port: number): Promise<undefined | Error> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', (error) => resolve(error));
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(undefined)));
  });
}

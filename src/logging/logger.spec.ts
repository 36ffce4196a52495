import { MemoryStream } from '../../test/support/memory-stream';
import { AppLogger } from './logger';

describe('AppLogger after its end', () => {
  it('drops what is logged after flush, without throwing or emitting an error', async () => {
    const stream = new MemoryStream();
    const errors: unknown[] = [];
    stream.on('error', (error) => errors.push(error));
    const logger = new AppLogger({ level: 'debug', format: 'json', stream });
    logger.log('before the end', 'Test');
    await logger.flush();
    expect(() => {
      logger.error('after the end', 'Test');
      logger.debug('after the end', new Error('late').stack);
    }).not.toThrow();
    await logger.flush();
    await new Promise((resolve) => setImmediate(resolve));
    expect(stream.lines.map((line) => line.message)).toEqual(['before the end']);
    expect(errors).toEqual([]);
  });
});

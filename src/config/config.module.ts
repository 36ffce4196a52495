import { Global, Module, type DynamicModule } from '@nestjs/common';
import { CLOCK, systemClock, type Clock } from '../clock';
import type { AppConfig } from './schema';

/** The validated configuration, loaded once before Nest starts (a bad file never gets this far). */
export const APP_CONFIG = Symbol('AppConfig');
/** The path the configuration was read from, for messages. The clock travels with the configuration: both are given. */
export const CONFIG_FILE = Symbol('ConfigFile');

@Global()
@Module({})
export class ConfigModule {
  static forRoot(config: AppConfig, file: string, clock: Clock = systemClock): DynamicModule {
    return {
      module: ConfigModule,
      providers: [
        { provide: APP_CONFIG, useValue: config },
        { provide: CONFIG_FILE, useValue: file },
        { provide: CLOCK, useValue: clock },
      ],
      exports: [APP_CONFIG, CONFIG_FILE, CLOCK],
    };
  }
}

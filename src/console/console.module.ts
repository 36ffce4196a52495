import { Module } from '@nestjs/common';
import { ConsoleController } from './console.controller';
import { ConsoleReader } from './console-reader';
import { ConsoleExplain } from './explain';

/** The operator console on the HTTP port (see ConsoleController). */
@Module({ controllers: [ConsoleController], providers: [ConsoleReader, ConsoleExplain] })
export class ConsoleModule {}

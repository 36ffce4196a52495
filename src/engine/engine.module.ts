import { Global, Module } from '@nestjs/common';
import { AuditTrail } from './audit';
import { EngineService } from './engine.service';
import { Executor } from './executor';
import { Ledger } from './ledger';
import { PolicyRegistry } from './policy-registry';

@Global()
@Module({
  providers: [PolicyRegistry, Ledger, AuditTrail, Executor, EngineService],
  exports: [PolicyRegistry, AuditTrail, EngineService],
})
export class EngineModule {}

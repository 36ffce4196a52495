import { Global, Module } from '@nestjs/common';
import { AuditTrail } from './audit';
import { EngineService } from './engine.service';
import { Executor } from './executor';
import { ForgeHealth } from './forge-health';
import { Ledger } from './ledger';
import { PolicyRegistry } from './policy-registry';
import { UnsettledTargets } from './unsettled';

@Global()
@Module({
  providers: [PolicyRegistry, Ledger, AuditTrail, UnsettledTargets, Executor, EngineService, ForgeHealth],
  exports: [PolicyRegistry, AuditTrail, EngineService, ForgeHealth],
})
export class EngineModule {}

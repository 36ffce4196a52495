import { Global, Module, type DynamicModule } from '@nestjs/common';
import { AuditTrail } from './audit';
import { EngineService } from './engine.service';
import { Executor } from './executor';
import { Ledger } from './ledger';
import type { PolicyRunner } from './policy';
import { POLICY_RUNNERS, PolicyRegistry } from './policy-registry';
import { UnsettledTargets } from './unsettled';

@Global()
@Module({})
export class EngineModule {
  /** The engine with the policy types it runs (the build's list; tests may register more on the registry). */
  static forRoot(runners: readonly PolicyRunner[]): DynamicModule {
    return {
      module: EngineModule,
      providers: [
        { provide: POLICY_RUNNERS, useValue: runners },
        PolicyRegistry,
        Ledger,
        AuditTrail,
        UnsettledTargets,
        Executor,
        EngineService,
      ],
      exports: [PolicyRegistry, AuditTrail, EngineService],
    };
  }
}

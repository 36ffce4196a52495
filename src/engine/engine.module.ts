import { Global, Module, type DynamicModule } from '@nestjs/common';
import { LocalFiles } from '../effects/local-files';
import { ActiveConfig } from './active-config';
import { PolicyContexts } from './contexts';
import { DaemonSchedules } from './daemon';
import { RecordsOwner } from './records-owner';
import { EngineService } from './engine.service';
import { Executor } from './executor';
import { EngineGauges } from './gauges';
import { PassRunner } from './pass-runner';
import type { PolicyType } from './policy';
import { POLICY_TYPE_LIST, KnownPolicies } from './known-policies';
import { PassCycle } from './pass-cycle';
import { QueueConsumer } from './queue-consumer';
import { AuditTrail } from './stores/audit';
import { DataMarker } from './stores/data-marker';
import { RedisDiscoveryCache } from './stores/discovery-cache';
import { Ledger } from './stores/ledger';
import { PassHistory } from './stores/pass-history';
import { PassLog } from './stores/pass-log';
import { OwnHarm } from './stores/own-harm';
import { PolicyPauses } from './stores/pauses';
import { ReplicaPresence } from './stores/replicas';
import { PauseSwitch } from './pause-switch';
import { RecordedForge } from './stores/recorded-forge';
import { PrefixKeys } from './stores/prefix-keys';
import { PolicyMeasureStore } from './stores/policy-measures';
import { RedisForgeLimits } from './stores/forge-limits';
import { PolicyStates } from './stores/policy-state';
import { UnsettledTargets } from './stores/unsettled';
import { WebhookDeliveries } from './stores/webhook-deliveries';

/** The stores: every record the engine keeps in Redis, each behind a class named after what it keeps. */
const STORES = [
  AuditTrail,
  DataMarker,
  RedisDiscoveryCache,
  Ledger,
  OwnHarm,
  PassHistory,
  PassLog,
  PolicyMeasureStore,
  RedisForgeLimits,
  PolicyPauses,
  PolicyStates,
  RecordedForge,
  PrefixKeys,
  ReplicaPresence,
  UnsettledTargets,
  WebhookDeliveries,
];

@Global()
@Module({})
export class EngineModule {
  /** The engine with the policy types it runs (the build's list; tests may register more on the registry). */
  static forRoot(policyTypes: readonly PolicyType[]): DynamicModule {
    return {
      module: EngineModule,
      providers: [
        { provide: POLICY_TYPE_LIST, useValue: policyTypes },
        KnownPolicies,
        ...STORES,
        ActiveConfig,
        PolicyContexts,
        Executor,
        PassRunner,
        EngineGauges,
        PassCycle,
        QueueConsumer,
        DaemonSchedules,
        RecordsOwner,
        EngineService,
        PauseSwitch,
        // The disk, handed to every policy in its context.
        LocalFiles,
      ],
      exports: [
        KnownPolicies,
        RedisForgeLimits,
        AuditTrail,
        WebhookDeliveries,
        EngineService,
        PauseSwitch,
        PassHistory,
        PassLog,
        PolicyPauses,
        OwnHarm,
        ReplicaPresence,
        UnsettledTargets,
        ActiveConfig,
      ],
    };
  }
}

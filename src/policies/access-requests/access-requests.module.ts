import { Module, type OnModuleInit } from '@nestjs/common';
import { PolicyRegistry } from '../../engine/policy-registry';
import { accessRequestsRunner } from './access-requests.runner';

/** Plugs the access_requests policy type into the engine (the engine's module is global and provides the registry). */
@Module({})
export class AccessRequestsModule implements OnModuleInit {
  constructor(private readonly registry: PolicyRegistry) {}

  onModuleInit(): void {
    this.registry.register(accessRequestsRunner);
  }
}

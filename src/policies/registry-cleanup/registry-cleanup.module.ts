import { Module, type OnModuleInit } from '@nestjs/common';
import { PolicyRegistry } from '../../engine/policy-registry';
import { registryCleanupRunner } from './registry-cleanup.runner';

/** Plugs the registry_cleanup policy type into the engine (the engine's module is global and provides the registry). */
@Module({})
export class RegistryCleanupModule implements OnModuleInit {
  constructor(private readonly registry: PolicyRegistry) {}

  onModuleInit(): void {
    this.registry.register(registryCleanupRunner);
  }
}

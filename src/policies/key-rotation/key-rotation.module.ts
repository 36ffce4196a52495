import { Module, type OnModuleInit } from '@nestjs/common';
import { PolicyRegistry } from '../../engine/policy-registry';
import { keyRotationRunner } from './key-rotation.runner';

/** Plugs the key_rotation policy type into the engine (the engine's module is global and provides the registry). */
@Module({})
export class KeyRotationModule implements OnModuleInit {
  constructor(private readonly registry: PolicyRegistry) {}

  onModuleInit(): void {
    this.registry.register(keyRotationRunner);
  }
}

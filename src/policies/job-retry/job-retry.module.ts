import { Module, type OnModuleInit } from '@nestjs/common';
import { PolicyRegistry } from '../../engine/policy-registry';
import { jobRetryRunner } from './job-retry.runner';

/** Plugs the job_retry policy type into the engine (the engine's module is global and provides the registry). */
@Module({})
export class JobRetryModule implements OnModuleInit {
  constructor(private readonly registry: PolicyRegistry) {}

  onModuleInit(): void {
    this.registry.register(jobRetryRunner);
  }
}

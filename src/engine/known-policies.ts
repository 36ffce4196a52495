import { Inject, Injectable, Optional } from '@nestjs/common';
import type { PolicyConfig } from '../config/policy-type';
import type { PolicyType } from './policy';

/** The policy types the application is built with: the build's policy list (`policies/index.ts`), given by the app module. */
export const POLICY_TYPE_LIST = Symbol('PolicyTypes');

/**
 * The policy types this process can run: the application's list, plus any a test registers. The engine knows no
 * policy by name; it is handed them.
 */
@Injectable()
export class KnownPolicies {
  private readonly policyTypes = new Map<string, PolicyType>();

  constructor(@Optional() @Inject(POLICY_TYPE_LIST) policyTypes: readonly PolicyType[] | null) {
    for (const policyType of policyTypes ?? []) this.register(policyType);
  }

  register<Config extends PolicyConfig, Snapshot>(policyType: PolicyType<Config, Snapshot>): void {
    const { type } = policyType.definition;
    if (this.policyTypes.has(type)) throw new Error(`policy type "${type}" is registered twice`);
    this.policyTypes.set(type, policyType);
  }

  get(type: string): PolicyType {
    const policyType = this.policyTypes.get(type);
    if (!policyType)
      throw new Error(`policy type "${type}" is not in this build; is it in the list of policies/index.ts?`);
    return policyType;
  }
}

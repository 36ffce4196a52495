import { createHash } from 'node:crypto';
import { dirname } from 'node:path';
import type { HookRunner } from '../../effects/hook-runner';
import type { SecretFiles } from '../../effects/secret-files';
import type { StepContext } from '../../engine/policy';
import { NotFoundError } from '../../gitlab/transport/errors';
import type { CiVariable } from '../../gitlab/types/variables';
import type { ResolvedDelivery, TokenRecord } from './token-rotation.record';

/**
 * How each place a new token's value goes (ResolvedDelivery, in token-rotation.record.ts) is written and read back. A
 * variable is compared by the SHA-256 of its value (a hidden one, whose value the forge never shows again, by its
 * flags); a file by the SHA-256 of its content; on_rotate by its exit status.
 */

/** A delivery as the record names it once done. */
export function deliveryId(delivery: ResolvedDelivery): string {
  switch (delivery.type) {
    case 'variable':
      return `variable ${delivery.key} (${delivery.environment_scope}) of ${delivery.scope.slice(0, -1)} ${delivery.place}`;
    case 'file':
      return `file ${delivery.path}`;
    case 'hook':
      return 'on_rotate';
  }
}

export function sha256(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('hex');
}

/** What the value file holds: the token's id and value, so a crash after the answer resumes from it. */
export interface TokenValueFile {
  readonly token_id: number;
  readonly value: string;
  readonly expires_at: string | null;
  readonly rotation: string;
}

/** The value files and the deliveries, on the daemon's disk and the forge. */
export class TokenDelivery {
  constructor(
    private readonly files: SecretFiles,
    private readonly hooks: HookRunner,
  ) {}

  /** Written before anything else happens after the forge's answer (0600, atomically, its folder made 0700). */
  async keep(path: string, file: TokenValueFile): Promise<void> {
    await this.files.makePrivateFolder(dirname(path));
    await this.files.write(path, `${JSON.stringify(file)}\n`, 0o600);
  }

  /** The value file, or undefined when there is none or it is not one (never its text in an error). */
  async kept(path: string): Promise<TokenValueFile | undefined> {
    const text = await this.files.read(path);
    if (text === undefined) return undefined;
    try {
      const parsed = JSON.parse(text) as Partial<TokenValueFile>;
      if (
        typeof parsed.token_id === 'number' &&
        typeof parsed.value === 'string' &&
        typeof parsed.rotation === 'string'
      )
        return parsed as TokenValueFile;
    } catch {
      // A damaged file reads as none: it is not shown.
    }
    return undefined;
  }

  unusable(directory: string): Promise<string | undefined> {
    return this.files.unusable(directory);
  }

  /** Writes one delivery; throws what the forge or the disk refused (never with the value). */
  async write(context: StepContext, record: TokenRecord, delivery: ResolvedDelivery, value: string): Promise<void> {
    switch (delivery.type) {
      case 'variable': {
        const variables = this.variables(context, delivery.scope);
        const masked = delivery.masked || delivery.hidden;
        try {
          // The variable usually exists (the old token is in it): one request. masked_and_hidden is only for a new one.
          await variables.edit(
            delivery.place,
            delivery.key,
            { value, protected: delivery.protected, masked },
            { environment_scope: delivery.environment_scope },
          );
        } catch (error) {
          if (!(error instanceof NotFoundError)) throw error;
          await variables.create(delivery.place, {
            key: delivery.key,
            value,
            protected: delivery.protected,
            masked,
            environment_scope: delivery.environment_scope,
            ...(delivery.hidden ? { masked_and_hidden: true } : {}),
          });
        }
        return;
      }
      case 'file':
        await this.files.makePrivateFolder(dirname(delivery.path));
        await this.files.write(delivery.path, value, 0o600);
        return;
      case 'hook': {
        const failure = await this.hooks.run(
          delivery.command,
          delivery.env,
          {
            FORGEWARDEN_TOKEN_KIND: record.kind,
            FORGEWARDEN_TOKEN_HOLDER: String(record.holder.ref),
            FORGEWARDEN_TOKEN_NAME: record.name,
            FORGEWARDEN_TOKEN_ID: String(record.new_token_id ?? ''),
            FORGEWARDEN_OLD_TOKEN_ID: String(record.old_token_id),
            FORGEWARDEN_TOKEN_EXPIRES_AT: record.expires_at,
          },
          value,
        );
        if (failure) throw new Error(`on_rotate ${failure}`);
        return;
      }
    }
  }

  /** Why the delivery does not hold the value whose SHA-256 is `hash` now, or undefined when it does. */
  async missing(context: StepContext, delivery: ResolvedDelivery, hash: string): Promise<string | undefined> {
    switch (delivery.type) {
      case 'variable': {
        const found = await this.variable(context, delivery);
        if (!found) return `${deliveryId(delivery)} is gone`;
        // A hidden variable's value is never shown again: its flags are what can be read back.
        if (found.value === null) return found.hidden === true ? undefined : `${deliveryId(delivery)} shows no value`;
        return sha256(found.value) === hash ? undefined : `${deliveryId(delivery)} holds another value`;
      }
      case 'file': {
        const text = await this.files.read(delivery.path);
        if (text === undefined) return `${deliveryId(delivery)} is gone`;
        return sha256(text) === hash ? undefined : `${deliveryId(delivery)} holds another value`;
      }
      case 'hook':
        // What a command did with the value cannot be read back: its exit status was the check.
        return undefined;
    }
  }

  private variables(context: StepContext, scope: 'projects' | 'groups') {
    return scope === 'projects' ? context.client.projectVariables : context.client.groupVariables;
  }

  private async variable(
    context: StepContext,
    delivery: Extract<ResolvedDelivery, { type: 'variable' }>,
  ): Promise<CiVariable | undefined> {
    try {
      return await this.variables(context, delivery.scope).show(delivery.place, delivery.key, {
        environment_scope: delivery.environment_scope,
      });
    } catch (error) {
      if (error instanceof NotFoundError) return undefined;
      throw error;
    }
  }
}

import { z } from 'zod';
import type { IssuedToken, ListedToken, TokenKind } from '../../src/policies/key-rotation/token-kind';
import { tokenRuleFields, withTokenChecks } from '../../src/policies/key-rotation/token-rotation.schema';

/**
 * A token kind that is not part of the build, in one file: the tokens of a secrets vault's accounts, which the vault
 * can rotate (a new id, the old one revoked) and make. The vault lives in memory and records every call.
 */

export interface VaultToken {
  id: number;
  name: string;
  value: string;
  revoked: boolean;
  expires_at: string;
}

export class Vault {
  readonly accounts = new Map<string, VaultToken[]>();
  readonly calls: string[] = [];
  private nextId = 900;

  tokens(account: string): VaultToken[] {
    return this.accounts.get(account) ?? [];
  }

  rotate(account: string, id: number, expiresAt: string): VaultToken {
    this.calls.push(`rotate ${account} ${id} ${expiresAt}`);
    const old = this.tokens(account).find((token) => token.id === id && !token.revoked);
    if (!old) throw new Error(`no active token ${id}`);
    old.revoked = true;
    const made = {
      id: this.nextId++,
      name: old.name,
      value: `vault-${this.nextId}-secret`,
      revoked: false,
      expires_at: expiresAt,
    };
    this.tokens(account).push(made);
    return made;
  }
}

const schema = z
  .array(withTokenChecks(z.strictObject({ account: z.string().min(1), ...tokenRuleFields(['rotate']) })))
  .default([]);

export function vaultTokensKind(vault: Vault): TokenKind<z.output<typeof schema>[number]> {
  const listed = (token: VaultToken): ListedToken => ({
    id: token.id,
    name: token.name,
    active: !token.revoked,
    revoked: token.revoked,
    created_at: null,
    expires_at: token.expires_at,
    family: token.name,
    scopes: [],
  });
  const issued = (token: VaultToken): IssuedToken => ({
    id: token.id,
    value: token.value,
    expires_at: token.expires_at,
  });
  return {
    name: 'vault_token',
    noun: 'vault token',
    schema,
    observe: async (rules) =>
      rules.map((rule) => ({
        holders: [
          {
            holder: { ref: rule.account, label: `account ${rule.account}` },
            tokens: vault.tokens(rule.account).map(listed),
          },
        ],
      })),
    list: async (_context, holder) => vault.tokens(String(holder.ref)).map(listed),
    rotate: async (_context, holder, tokenId, expiresAt) =>
      issued(vault.rotate(String(holder.ref), tokenId, expiresAt)),
    create: () => Promise.reject(new Error('the vault only rotates')),
    revoke: async () => false,
    variablePlace: () => undefined,
    probes: () => [],
  };
}

import type { z } from 'zod';
import type { ObserveContext, StepContext, TargetProbe } from '../../engine/policy';
import type { TokenRule } from './token-rotation.schema';

/**
 * A kind of token key_rotation rotates (project, group or personal access tokens, deploy tokens): one file or folder
 * under kinds/ and one line in kinds/index.ts. Unlike a key pair, a token is made by the forge and its value exists
 * only in the answer that made it, so tokens have their own steps (token-rotation.actions.ts); a kind reads its
 * tokens and makes the forge calls, the core decides, keeps the records and delivers (docs/policies.md, key_rotation).
 */
export interface TokenKind<Rule extends TokenRule = TokenRule> {
  /** The records' `kind` and the start of their rotations' ids. */
  readonly name: string;
  /** How plan names one: `project access token`. */
  readonly noun: string;
  /** The policy file's list of entries of this kind; its key is the kind's line in kinds/index.ts. */
  readonly schema: z.ZodType<Rule[]>;
  /**
   * Whether one of its tokens may be the one the daemon authenticates with (personal, project and group access
   * tokens share one id space), which no policy rotates. Not for deploy tokens, whose ids are another count.
   */
  readonly mayBeDaemonToken?: boolean;
  /**
   * Reads each entry's holders and their tokens, revoked ones too (an open rotation of one is found by it); a holder
   * the forge refuses is recorded as unobserved.
   */
  observe(rules: readonly Rule[], context: ObserveContext, self: SelfToken): Promise<TokenListing[]>;
  /** One holder's tokens as the forge lists them now, revoked ones too; undefined when the holder is gone (404). */
  list(context: StepContext, holder: TokenHolder): Promise<ListedToken[] | undefined>;
  /** The forge's rotate call (the old token revoked, a new id made); absent where the forge has none (deploy tokens). */
  rotate?(context: StepContext, holder: TokenHolder, tokenId: number, expiresAt: string): Promise<IssuedToken>;
  /** A new token like `like` (its name, scopes and access level), expiring at `expiresAt`. */
  create(context: StepContext, holder: TokenHolder, like: TokenTemplate, expiresAt: string): Promise<IssuedToken>;
  /** Revokes a token; answers false when the forge no longer has it. */
  revoke(context: StepContext, holder: TokenHolder, tokenId: number): Promise<boolean>;
  /** Where a variable delivery without `project`/`group` goes: the holder itself, when it has variables. */
  variablePlace(holder: TokenHolder): VariablePlace | undefined;
  probes(rules: readonly Rule[]): TargetProbe[];
  /** Why these entries need an administrator's token, or undefined (said by `doctor` and at start). */
  needsAdministrator?(rules: readonly Rule[]): string | undefined;
}

/** The daemon's own token: never rotated by a policy (see gitlab.token_file), and whose user it is. */
export interface SelfToken {
  readonly tokenId: number | undefined;
  readonly userId: number;
}

/** What holds tokens: a project, a group or a user, as the forge's calls take it. */
export interface TokenHolder {
  readonly ref: string | number;
  /** Where a kind whose tokens live on projects and groups alike finds it (deploy tokens). */
  readonly scope?: 'projects' | 'groups';
  /** `project acme/api`, `group acme`, `user mia`. */
  readonly label: string;
}

/** A CI/CD variable's owner. */
export interface VariablePlace {
  readonly scope: 'projects' | 'groups';
  readonly ref: string | number;
}

/** A token as a listing shows it: never with a value. */
export interface ListedToken {
  readonly id: number;
  readonly name: string;
  /** Neither revoked nor expired. */
  readonly active: boolean;
  readonly revoked: boolean;
  /** Absent where the forge does not say (deploy tokens). */
  readonly created_at: string | null;
  /** A day or a timestamp; null: never expires. */
  readonly expires_at: string | null;
  /**
   * Tokens rotated from one another share it (a project's token keeps its bot user through rotations): how a lost
   * answer's successor is found. Deploy tokens, which are never rotated, use their name.
   */
  readonly family: string;
  readonly scopes: readonly string[];
  readonly access_level?: number;
  /** A deploy token's login name. */
  readonly username?: string;
}

/** What a new token keeps of the old one. */
export type TokenTemplate = Pick<ListedToken, 'name' | 'scopes' | 'access_level' | 'username'>;

/** The forge's answer that made a token: the only place its value is ever shown. */
export interface IssuedToken {
  readonly id: number;
  readonly value: string;
  readonly expires_at: string | null;
}

/** One entry's holders, each with its tokens (revoked ones too), or why it could not be read. */
export interface TokenListing {
  readonly holders: ReadonlyArray<
    | { readonly holder: TokenHolder; readonly tokens: readonly ListedToken[] }
    | { readonly holder: TokenHolder; readonly unreadable: string }
  >;
}

/**
 * The token kinds of a build, each under its section of the policy file. The one place a token kind is looked up by
 * name: everything else asks the kind.
 */
export class TokenKinds<Sections extends Readonly<Record<string, TokenKind>> = Readonly<Record<string, TokenKind>>> {
  private readonly byName = new Map<string, TokenKind>();

  constructor(readonly sections: Sections) {
    for (const kind of Object.values(sections)) {
      if (this.byName.has(kind.name)) throw new TypeError(`token kind "${kind.name}" is registered twice`);
      this.byName.set(kind.name, kind);
    }
  }

  entries(): Array<[section: string, kind: TokenKind]> {
    return Object.entries(this.sections);
  }

  has(name: string): boolean {
    return this.byName.has(name);
  }

  named(name: string): TokenKind {
    const kind = this.byName.get(name);
    if (!kind)
      throw new TypeError(`key_rotation: no token kind "${name}" (known: ${[...this.byName.keys()].join(', ')})`);
    return kind;
  }

  schemas(): { [Section in keyof Sections]: Sections[Section]['schema'] } {
    return Object.fromEntries(this.entries().map(([section, kind]) => [section, kind.schema])) as {
      [Section in keyof Sections]: Sections[Section]['schema'];
    };
  }
}

/** A personal, project or group access token as a listing entry: the same fields on each, only the family differs. */
export function listedAccessToken(
  token: Pick<ListedToken, 'id' | 'name' | 'active' | 'revoked' | 'created_at' | 'expires_at' | 'scopes'>,
  family: string,
): ListedToken {
  const { id, name, active, revoked, created_at, expires_at, scopes } = token;
  return { id, name, active, revoked, created_at, expires_at, family, scopes };
}

import type { z } from 'zod';
import type { ActContext, ObserveContext, TargetProbe } from '../../engine/policy';
import type { DeployProject, RotationRecord, SshOwner } from './key-rotation.record';
import type { Due } from './key-rotation.timing';

/**
 * A kind of credential key_rotation rotates: one file (or folder) under kinds/ and one line in kinds/index.ts. A kind
 * reads facts (its entries' listings, where a rotation's keys are now) and performs its effects (the forge calls of
 * each step); the core builds every decision, keeps the records and runs the state machine. See docs/architecture.md,
 * "Credential kinds".
 */
export interface CredentialKind<Rule = unknown, Facts = unknown> {
  /** The records' `kind`, the start of their rotations' ids, and what write_key's params name. */
  readonly name: string;
  /** The policy file's list of entries of this kind (`[]` when left out); its key is the kind's line in kinds/index.ts. */
  readonly schema: z.ZodType<Rule[]>;
  /**
   * `one`: the credential sits on one holder, which the record's `owner` names when it is a user (an SSH key) and its
   * `holder` otherwise (a project's token). `several`: it is spread over projects, the new one enabled on each that
   * holds the old one (a deploy key); the record's `projects`.
   */
  readonly holders: 'one' | 'several';

  /** Reads the entries' credentials; one the forge refuses is recorded in `context.unobserved` and the others go on. */
  observe(rules: readonly Rule[], context: ObserveContext, token: TokenUser): Promise<Observed<Facts>>;
  /** Reads, for the kind's open rotations, what `observe` did not (a user no entry lists any more). */
  observeRotations?(
    rules: readonly Rule[],
    facts: Facts,
    records: readonly RotationRecord[],
    context: ObserveContext,
    token: TokenUser,
  ): Promise<Partial<Facts>>;
  /** The kind's facts as decide reads them this pass: pure. */
  view(rules: readonly Rule[], facts: Facts, now: Date): KindView;
  /** What a pass looked at, for its log line: `2 SSH keys of 1 user`. */
  summary(facts: Facts): string;
  /** The projects globs chose, for plan; undefined where the file lists them all. */
  covered?(rules: readonly Rule[], facts: Facts): readonly string[] | undefined;
  probes(rules: readonly Rule[]): TargetProbe[];
  needsAdministrator?(rules: readonly Rule[]): string | undefined;

  /** Reads write_key's params into who holds the credential, as the record keeps it. */
  readonly start: z.ZodType<Holders>;
  /** Puts the public key on the forge, or adopts the one a lost answer left there (same fingerprint). */
  upload(context: ActContext, record: RotationRecord, publicKey: string, request: UploadRequest): Promise<Uploaded>;
  /** `several`: puts the new key on one more project (with `can_push`); answers whether it had to be enabled, and the project's id. */
  spread?(context: ActContext, record: RotationRecord, newKeyId: number, place: DeployProject): Promise<Spread>;
  /** Whether the forge lists the recorded new key anywhere the rotation's keys are. */
  listedAnywhere(context: ActContext, record: RotationRecord): Promise<boolean>;
  /** Why the holder (`project` for `several`) does not hold the old key as recorded now, or undefined. */
  oldKeyHeld(
    context: ActContext,
    record: RotationRecord,
    project: string | number | undefined,
  ): Promise<string | undefined>;
  /**
   * Where the new key is not listed as recorded, among `projects` and where the bot put it, each that cannot be read
   * now named with why (unseen is not covered); `on`: where it is.
   */
  newKeyMissing(
    context: ActContext,
    record: RotationRecord,
    projects: readonly { project: string | number }[],
  ): Promise<NewKeyFound>;
  /** Why the new key is not on the holder (`project` for `several`) as recorded now, or undefined. */
  newKeyHeld(
    context: ActContext,
    record: RotationRecord,
    project: string | number | undefined,
  ): Promise<string | undefined>;
  /** Takes the new key away from the holder (`project` for `several`); answers whether it was gone already. */
  removeNew(context: ActContext, record: RotationRecord, project: string | number | undefined): Promise<boolean>;
  /** Why the old key may not go now (the new one missing where the old one is, another key under its id), or undefined. */
  removeBlocked(
    context: ActContext,
    record: RotationRecord,
    projects: readonly DeployProject[],
  ): Promise<string | undefined>;
  /** Removes the old key (from `projects` for `several`); answers where it was gone already. */
  removeOld(context: ActContext, record: RotationRecord, projects: readonly DeployProject[]): Promise<string[]>;
}

/** The token's own user, read once a pass: whose keys `self` means, and whether others' may be read. */
export interface TokenUser {
  readonly id: number;
  readonly username: string;
  readonly admin: boolean;
}

/** A kind's part of the snapshot, and the rotations its listed credentials concern (their records are read). */
export interface Observed<Facts> {
  readonly facts: Facts;
  readonly rotations: readonly string[];
}

/** The kind's facts as decide reads them. */
export interface KindView {
  /** One listing per entry, in the file's order. */
  listings(): readonly Listing[];
  /** Whether a rotation still rests on what the forge shows, and where its keys are. */
  premise(record: RotationRecord): Premise;
  /** A rotation whose old key no entry lists this pass: how plan names it, and the new key's lifetime. */
  unlisted(record: RotationRecord): { readonly target: string; readonly lifetime: number | undefined };
  /** Where the new key of a closed rotation is still listed, or may be where the token cannot see: none, or it goes first. */
  leftover(record: RotationRecord): Leftover;
}

/** One entry: the credentials its titles pick from, or why none could be read (decide makes it a skip). */
export type Listing =
  | { readonly titles: readonly TitlePattern[]; readonly keys: readonly ManagedKey[] }
  | { readonly unreadable: { readonly target: string; readonly key: string; readonly reason: string } };

/** An RE2 expression of an entry's `titles`. */
export interface TitlePattern {
  test(title: string): boolean;
}

/** A listed credential an entry manages: what decide needs to skip it, continue its rotation or start one. */
export interface ManagedKey {
  /** The key's id on the forge. */
  readonly keyId: number;
  readonly title: string;
  readonly fingerprint: string | undefined;
  readonly rotation: string;
  /** How plan names it: `root's SSH key 12 "ci"`. */
  readonly target: string;
  /** Whether a rotation starts now, and why, or why not. */
  readonly due: Due;
  /** The new key's lifetime, where the forge lets keys expire. */
  readonly lifetime: number | undefined;
  readonly grace: number;
  /** `one`: its holder, when a user. */
  readonly owner: SshOwner | null;
  /** `one`: its holder, when not a user. */
  readonly holder?: string | number;
  /** `several`: the readable projects that hold it, the first one first (where the new key is created). */
  readonly projects: readonly DeployProject[];
  /** Whom the key file is named after (the user, the first project). */
  readonly holderName: string;
  /** `several`: the selected projects that could not be read this pass; they may hold it (on_rotate waits for them). */
  readonly unreadable?: readonly (string | number)[];
}

/** Who holds a credential, as a rotation's record keeps it. */
export type Holders = Pick<RotationRecord, 'owner' | 'projects' | 'holder'>;

/**
 * A rotation the forge contradicts is closed (its new key first withdrawn wherever it is still listed), one it cannot
 * read now waits, else its places on the forge now.
 */
export type Premise = { readonly close: string } | Waiting | Withdrawal | Places;

/** A rotation that cannot go on until the token sees more; `outOfSight` names where its new key may be live unseen. */
export interface Waiting {
  readonly wait: string;
  readonly outOfSight?: string;
}

/** A rotation the forge contradicts while its new key is still live: the key goes first, then the rotation closes. */
export interface Withdrawal extends Leftover {
  readonly withdraw: string;
}

/** Where a new key no open rotation accounts for is listed now, and where it may be that the token cannot see. */
export interface Leftover {
  readonly from: readonly Holder[];
  /** Where the token cannot see whether it is there (named as the bot's open harm); undefined when nowhere. */
  readonly outOfSight?: string;
}

/** One place a credential sits: a project of a `several` kind, or the one holder (`project` undefined). */
export interface Holder {
  readonly project?: string | number;
}

/** Where a rotation's keys are now, within the policy's selection. */
export interface Places {
  /** The readable projects that hold the old key (`several`), `[]` for `one`; null: the old key is gone (`one`). */
  readonly oldOn: readonly DeployProject[] | null;
  /** The readable projects that list the new key (recorded id and fingerprint), with its can_push there. */
  readonly newOn: ReadonlyMap<string, boolean>;
  /** Selected projects that could not be read (refused, not found, failing): neither touched nor counted as empty. */
  readonly unreadable: readonly UnreadProject[];
  /**
   * Where a person took the old key away while the new key is there (not the bot's own removal): a person's revocation
   * wins, and the new key leaves too. For `one`, with `oldOn` null.
   */
  readonly revoked: readonly Holder[];
}

/** A selected project whose keys are not known this pass. */
export interface UnreadProject {
  readonly project: string | number;
  /**
   * The forge answered 404: deleted, moved, or hidden from the token, which it answers alike, so not proof of absence.
   * Else refused or failing.
   */
  readonly gone: boolean;
}

/** What enabling the new key on one more project did: whether it had to be enabled, and the project's id. */
export interface Spread {
  readonly enabled: boolean;
  readonly projectId?: number;
}

/** What upload_key's params say beyond the rotation: the new key's lifetime, the project to create it on. */
export interface UploadRequest {
  readonly lifetimeMs: number | null | undefined;
  readonly place: DeployProject | undefined;
}

/** What an upload changed in the record, and what the audit trail says of it. */
export interface Uploaded {
  readonly recorded: Partial<Pick<RotationRecord, 'new_key_id' | 'expires_at' | 'new_key_on' | 'project_ids'>>;
  readonly detail: string;
}

export interface NewKeyFound {
  readonly missing: readonly string[];
  /** `several`: the projects (refKey) that list it. */
  readonly on: readonly string[];
}

/**
 * The kinds of a build, each under its section of the policy file, in the file's order. The one place a kind is
 * looked up by name: everything else asks the kind.
 */
export class CredentialKinds<
  Sections extends Readonly<Record<string, CredentialKind>> = Readonly<Record<string, CredentialKind>>,
> {
  private readonly byName = new Map<string, CredentialKind>();

  constructor(readonly sections: Sections) {
    for (const kind of Object.values(sections)) {
      if (this.byName.has(kind.name)) throw new TypeError(`credential kind "${kind.name}" is registered twice`);
      this.byName.set(kind.name, kind);
    }
  }

  /** Each kind with its section, in the file's order. */
  entries(): Array<[section: string, kind: CredentialKind]> {
    return Object.entries(this.sections);
  }

  names(): string[] {
    return [...this.byName.keys()];
  }

  has(name: string): boolean {
    return this.byName.has(name);
  }

  /** The kind a record or a step's params name; a name no kind has is a bug, not something to act on. */
  named(name: string): CredentialKind {
    const kind = this.byName.get(name);
    if (!kind) throw new TypeError(`key_rotation: no credential kind "${name}" (known: ${this.names().join(', ')})`);
    return kind;
  }

  /** The schema of each section, for the policy type's schema. */
  schemas(): { [Section in keyof Sections]: Sections[Section]['schema'] } {
    return Object.fromEntries(this.entries().map(([section, kind]) => [section, kind.schema])) as {
      [Section in keyof Sections]: Sections[Section]['schema'];
    };
  }
}

import type { Clock } from '../clock';
import type { TokenRotationConfig } from '../config/schema';
import type { TokenFileReaders } from '../engine/stores/token-file-readers';
import type { Lease } from '../engine/stores/lease';
import {
  ApiError,
  type GitlabClient,
  NetworkError,
  NotFoundError,
  type PersonalAccessToken,
  RateLimitedError,
  UnauthorizedError,
  UnexpectedAnswerError,
} from '../gitlab';
import { redactor } from '../logging/redact';
import type { DaemonToken } from './daemon-token';
import { expiryVerdict } from './token-expiry';
import type { TokenFileState } from './token-file';

/**
 * Rotating the daemon's own token without ever being locked out: a pair of tokens that rotate each other by id, the
 * answer written before anything else (docs/operations.md, "Rotating it: a pair of tokens").
 */

export type RotationResult = 'not_due' | 'rotated' | 'recovered' | 'answer_lost' | 'waiting' | 'blocked' | 'failed';

export interface RotationOutcome {
  readonly result: RotationResult;
  /** What happened, in words for the log (never a value). */
  readonly words: string;
}

export interface TokenRotationDeps {
  /** Authenticates with `token`: always the active token of the file. */
  readonly client: GitlabClient;
  readonly token: DaemonToken;
  readonly readers: TokenFileReaders;
  readonly rotation: TokenRotationConfig;
  /** This process, as it names itself to the other replicas. */
  readonly replica: string;
  readonly clock: Clock;
  /** `GET /personal_access_tokens/self` with `value`: how a token an operator wrote into the file is first known. */
  readonly selfOf: (value: string) => Promise<PersonalAccessToken>;
  /** How long the rotation's lease lasts without renewal. */
  readonly leaseMs: number;
}

/** A replica that has not read the token file for this long is taken to be gone (they read it every 30 s). */
export const READER_SEEN_MS = 2 * 60_000;

export class TokenRotation {
  constructor(private readonly deps: TokenRotationDeps) {}

  /** One look: recovers a lost answer first, then rotates the spare when a token of the pair is due. */
  async run(): Promise<RotationOutcome> {
    const lease = await this.deps.readers.lease(this.deps.leaseMs);
    if (!lease) return { result: 'waiting', words: 'another replica is rotating the token' };
    try {
      return await this.runHeld(lease);
    } finally {
      await lease.release();
    }
  }

  private async runHeld(lease: Lease): Promise<RotationOutcome> {
    const file = this.deps.token.file;
    if (!file) return { result: 'blocked', words: 'rotation needs gitlab.token_file' };
    let state = await file.read();
    this.deps.token.take(state);
    await this.deps.readers.say(this.deps.replica, state.generation, this.deps.clock.now());
    if (state.tokens.length < 2) {
      return {
        result: 'blocked',
        words: `${file.path} holds one token: rotation needs a pair of the bot user's personal access tokens, one a line`,
      };
    }
    state = await this.learn(state);
    if (state.pending) {
      const recovery = await this.recover(state, lease);
      if ('outcome' in recovery) return recovery.outcome;
      state = recovery.state;
    }
    const spareIndex = 1 - state.active;
    const spare = state.tokens[spareIndex];
    if (spare.lost !== null)
      return { result: 'blocked', words: `the spare token is lost (${spare.lost}): write a new one into ${file.path}` };
    const now = this.deps.clock.now();
    if (!this.due(state, now))
      return { result: 'not_due', words: 'no token of the pair expires within token_rotation.before_expiry' };
    const wait = await this.notYet(state, now);
    if (wait !== undefined) return { result: 'waiting', words: wait };
    // The precondition, read at the moment of acting: a spare someone revoked is not brought back.
    let onForge: PersonalAccessToken;
    try {
      onForge = await this.deps.client.personalAccessTokens.show(spare.id!);
    } catch (error) {
      return { result: 'failed', words: `cannot read the spare token ${spare.id} now: ${describe(error)}` };
    }
    if (onForge.revoked) return this.lose(state, spareIndex, `token ${spare.id} was revoked on the forge by someone`);
    lease.assertHeld();
    return this.rotateSlot(state, spareIndex, spare.id!, 'rotated');
  }

  /** Ids, names and expiries of tokens an operator wrote (values only), each read with the token itself. */
  private async learn(state: TokenFileState): Promise<TokenFileState> {
    if (state.tokens.every((slot) => slot.id !== null)) return state;
    const tokens = [...state.tokens];
    for (const [index, slot] of tokens.entries()) {
      if (slot.id !== null) continue;
      try {
        const self =
          index === state.active
            ? await this.deps.client.personalAccessTokens.self()
            : await this.deps.selfOf(slot.value);
        tokens[index] = { ...slot, id: self.id, name: self.name, expires_at: self.expires_at };
      } catch (error) {
        if (!(error instanceof UnauthorizedError)) throw error;
        tokens[index] = { ...slot, lost: 'the forge refuses it (revoked or expired)' };
      }
    }
    return this.write({ ...state, tokens });
  }

  /** Due when either token of the pair expires within `before_expiry`; a pair that never expires never is. */
  private due(state: TokenFileState, nowMs: number): boolean {
    return state.tokens.some(
      (slot) =>
        slot.lost === null &&
        slot.expires_at !== null &&
        Date.parse(`${slot.expires_at}T00:00:00Z`) - nowMs <= this.deps.rotation.before_expiry,
    );
  }

  /** Why the spare may still be in use somewhere: retired less than `settle` ago, or a replica not moved off it yet. */
  private async notYet(state: TokenFileState, nowMs: number): Promise<string | undefined> {
    const spare = state.tokens[1 - state.active];
    if (spare.retired_at !== null && nowMs - Date.parse(spare.retired_at) < this.deps.rotation.settle) {
      return `the spare token ${spare.id} stopped being used at ${spare.retired_at}; it is rotated once token_rotation.settle has passed`;
    }
    const readers = await this.deps.readers.since(nowMs - READER_SEEN_MS, nowMs);
    const behind = readers.find((reader) => reader.generation < (spare.retired_generation ?? 0));
    if (behind) {
      return `replica ${behind.replica} still reads generation ${behind.generation} of the token file, not ${spare.retired_generation} that retired the spare: a replica that does not share the file would go on with the token about to be rotated`;
    }
    if (readers.length > this.deps.rotation.replicas) {
      return `${readers.length} replicas read the token file, token_rotation.replicas says ${this.deps.rotation.replicas}: rotated once they agree`;
    }
    return undefined;
  }

  /**
   * A rotation whose answer was lost: the token named in `pending` is read again. Not revoked, the rotate never took
   * effect; revoked, its successor (active, same name, a newer id, not ours) is rotated with the active token.
   */
  private async recover(
    state: TokenFileState,
    lease: Lease,
  ): Promise<{ state: TokenFileState } | { outcome: RotationOutcome }> {
    const pending = state.pending!;
    let old: PersonalAccessToken;
    try {
      old = await this.deps.client.personalAccessTokens.show(pending.id);
    } catch (error) {
      if (error instanceof NotFoundError || error instanceof UnauthorizedError) {
        return {
          outcome: await this.lose(
            state,
            pending.slot,
            `token ${pending.id}, being rotated, is no longer on the forge`,
          ),
        };
      }
      return {
        outcome: {
          result: 'failed',
          words: `cannot read token ${pending.id}, whose rotation's answer was lost: ${describe(error)}`,
        },
      };
    }
    if (!old.revoked) return { state: await this.write({ ...state, pending: null }) };
    let successors: PersonalAccessToken[];
    try {
      successors = await collect(
        this.deps.client.personalAccessTokens.all({ user_id: old.user_id, state: 'active', search: old.name }),
      );
    } catch (error) {
      return {
        outcome: {
          result: 'failed',
          words: `cannot list the tokens to find the successor of token ${old.id}: ${describe(error)}`,
        },
      };
    }
    const ours = new Set(state.tokens.map((slot) => slot.id));
    const found = successors.filter((t) => t.name === old.name && t.id > old.id && !ours.has(t.id));
    if (found.length === 0)
      return {
        outcome: await this.lose(
          state,
          pending.slot,
          `token ${old.id} was revoked and no active successor of it was found`,
        ),
      };
    if (found.length > 1) {
      const ids = found.map((t) => t.id).join(', ');
      return {
        outcome: {
          result: 'blocked',
          words: `tokens ${ids} are all named "${old.name}" and newer than token ${old.id}: which one the lost answer carried cannot be told; revoke those that are not the daemon's`,
        },
      };
    }
    lease.assertHeld();
    return { outcome: await this.rotateSlot(state, pending.slot, found[0].id, 'recovered') };
  }

  /**
   * Rotates token `tokenId` into slot `index` with the active token: `pending` is written first, the new value as soon
   * as it arrives, and the new token becomes the active one. A write that fails leaves `pending`, as a lost answer does.
   */
  private async rotateSlot(
    state: TokenFileState,
    index: number,
    tokenId: number,
    result: 'rotated' | 'recovered',
  ): Promise<RotationOutcome> {
    const now = this.deps.clock.now();
    const sent = await this.write({
      ...state,
      pending: { slot: index, id: tokenId, sent_at: new Date(now).toISOString() },
    });
    const expiresAt = new Date(now + this.deps.rotation.lifetime).toISOString().slice(0, 10);
    let answer;
    try {
      answer = await this.deps.client.personalAccessTokens.rotate(tokenId, { expires_at: expiresAt });
    } catch (error) {
      if (mayHaveActed(error)) {
        return {
          result: 'answer_lost',
          words: `the answer to the rotation of token ${tokenId} may be lost (${describe(error)}); its successor is looked for at the next run, the active token goes on`,
        };
      }
      await this.write({ ...sent, pending: null });
      return { result: 'failed', words: `the forge did not rotate token ${tokenId}: ${describe(error)}` };
    }
    redactor.addSecret(answer.token);
    const tokens = [...sent.tokens];
    tokens[index] = {
      id: answer.id,
      value: answer.token,
      name: answer.name,
      expires_at: answer.expires_at,
      retired_at: null,
      retired_generation: null,
      lost: null,
    };
    if (sent.active !== index) {
      tokens[sent.active] = {
        ...tokens[sent.active],
        retired_at: new Date(now).toISOString(),
        retired_generation: sent.generation + 1,
      };
    }
    await this.write({ ...sent, active: index, tokens, pending: null });
    const how =
      result === 'recovered' ? `recovered the lost rotation: rotated successor ${tokenId}` : `rotated token ${tokenId}`;
    return {
      result,
      words: `${how} into token ${answer.id}, expiring ${answer.expires_at}; requests use it from now on`,
    };
  }

  /** A slot given up: said in the file, and no longer rotated until an operator writes a new token. */
  private async lose(state: TokenFileState, index: number, why: string): Promise<RotationOutcome> {
    const tokens = [...state.tokens];
    tokens[index] = { ...tokens[index], lost: why };
    await this.write({ ...state, tokens, pending: state.pending?.slot === index ? null : state.pending });
    return {
      result: 'blocked',
      words: `${why}: the daemon goes on with the active token; write a new spare into ${this.deps.token.file?.path}`,
    };
  }

  /** The next generation of the file, written (0600, atomically) and used at once. */
  private async write(state: TokenFileState): Promise<TokenFileState> {
    const next = { ...state, generation: state.generation + 1 };
    await this.deps.token.file!.write(next);
    this.deps.token.take(next);
    return next;
  }
}

/**
 * Whether a failed rotate may have been done by the forge: an answer without the value, a connection lost after the
 * request left, a timeout, a 5xx (a proxy losing the forge's answer). A 4xx or 429 means it was not.
 */
function mayHaveActed(error: unknown): boolean {
  if (error instanceof UnexpectedAnswerError) return true;
  if (error instanceof NetworkError) return error.mayHaveReachedServer;
  if (error instanceof RateLimitedError) return false;
  if (error instanceof ApiError) return error.status >= 500 || error.status === 0;
  return true;
}

function describe(error: unknown): string {
  return error instanceof ApiError ? error.summary : error instanceof Error ? error.message : String(error);
}

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const item of items) all.push(item);
  return all;
}

/** What `doctor` says of a rotating pair: a lost answer or a lost token is a failure, the spare's expiry is judged. */
export function tokenFileChecks(
  state: TokenFileState,
  nowMs: number,
): { ok: boolean; warning?: boolean; line: string }[] {
  const checks: { ok: boolean; warning?: boolean; line: string }[] = [];
  if (state.pending) {
    checks.push({
      ok: false,
      line: `token rotation: the answer to the rotation of token ${state.pending.id} (sent ${state.pending.sent_at}) was not written; the daemon looks for its successor at its next run`,
    });
  }
  state.tokens.forEach((slot, index) => {
    if (index === state.active) return;
    const name = slot.id === null ? 'spare token' : `spare token ${slot.id}`;
    if (slot.lost !== null) {
      checks.push({ ok: false, line: `${name}: lost (${slot.lost}); write a new one into the token file` });
    } else if (slot.expires_at !== null) {
      const verdict = expiryVerdict({ state: 'expires', date: slot.expires_at }, nowMs);
      checks.push({
        ok: verdict.level !== 'failure',
        warning: verdict.level === 'warning',
        line: `${name}: ${verdict.words}`,
      });
    }
  });
  return checks;
}

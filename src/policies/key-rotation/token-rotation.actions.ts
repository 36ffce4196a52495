import type { ActionResult, StepContext } from '../../engine/policy';
import { redactor } from '../../logging/redact';
import type { IssuedToken, ListedToken, TokenKind, TokenKinds } from './token-kind';
import { deliveryId, sha256, type TokenDelivery } from './token-rotation.delivery';
import { loadTokenRecord, saveTokenRecord, type TokenRecord } from './token-rotation.record';
import {
  type CloseParams,
  type IssueParams,
  type IssueStart,
  recordOfIssue,
  type StepParams,
} from './token-rotation.params';
import { message } from './key-rotation.step-record';

/** A step decided in the same pass after one that did not complete: it does nothing, and the next pass retries both. */
export class TokenStepNotReadyError extends Error {}

/**
 * The effects of each token rotation step, whatever the kind: the kind makes the forge calls, the steps keep the record
 * and the value file. Every step re-reads its record first; errors name ids, keys and paths, never a value.
 */
export class TokenSteps {
  constructor(
    readonly kinds: TokenKinds,
    readonly delivery: TokenDelivery,
  ) {}

  /** The old token is still listed and active, unless a lost answer is being looked for (the step itself decides). */
  async issuePrecondition(params: IssueParams, context: StepContext): Promise<string | undefined> {
    const record = await loadTokenRecord(context.state, params.rotation);
    if (record?.step === 'sending' && record.generation === params.generation) return undefined;
    if (!('kind' in params)) return `rotation ${params.rotation} is no longer waiting for an answer`;
    const tokens = await this.kinds.named(params.kind).list(context, params.holder);
    const old = tokens?.find((token) => token.id === params.old_token_id);
    if (!old) return `token ${params.old_token_id} is no longer listed on ${params.holder.label}: not rotated`;
    if (!old.active)
      return `token ${params.old_token_id} on ${params.holder.label} is no longer active (revoked or expired by someone): not rotated`;
    return undefined;
  }

  /**
   * → sending → issued. `sending` (with the tokens listed now) is recorded before the call; the value file is written
   * before anything else once the answer is in. A rotation found at `sending` had its answer lost (or the daemon died
   * before it kept it): its value file is adopted when it holds the token, else the token the call made is looked for
   * (a token of the family the record does not know) and rotated again with the bot's own credential to learn a value;
   * a revoked token is never rotated (the forge would revoke the whole family). Only when nothing was made is the call
   * sent again.
   */
  async issue(raw: IssueParams, context: StepContext): Promise<ActionResult> {
    const existing = await loadTokenRecord(context.state, raw.rotation);
    if (existing && existing.generation > raw.generation)
      return { outcome: 'stale', detail: `rotation ${raw.rotation} is at generation ${existing.generation} now` };
    if (existing && existing.generation === raw.generation && existing.step !== 'sending')
      return { detail: `already issued: new token ${existing.new_token_id ?? '?'}` };
    if (existing && existing.generation < raw.generation && !['done', 'closed'].includes(existing.step)) {
      return {
        outcome: 'stale',
        detail: `generation ${existing.generation} of rotation ${raw.rotation} is still open (at ${existing.step})`,
      };
    }
    const resuming = existing?.step === 'sending' && existing.generation === raw.generation ? existing : undefined;
    if (!resuming && !('kind' in raw))
      throw new TokenStepNotReadyError(`not run: rotation ${raw.rotation} has no record to resume`);
    const secretsDir = (context.policy as { secrets_dir?: string }).secrets_dir;
    const problem = secretsDir ? await this.delivery.unusable(secretsDir) : undefined;
    if (problem) throw new Error(`${problem}; not rotating`);
    const record = resuming ?? recordOfIssue(raw as IssueStart, context.now);
    const kind = this.kinds.named(record.kind);
    const listed = await kind.list(context, record.holder);
    if (!listed) throw new Error(`${record.holder.label} is gone (404); nothing sent`);
    if (resuming) return this.resume(context, kind, resuming, listed);
    const old = listed.find((token) => token.id === record.old_token_id);
    if (!old?.active)
      return { outcome: 'stale', detail: `token ${record.old_token_id} is no longer active: not rotated` };
    // No record, but the value file holds an active token of this rotation: its record was lost (Redis came back
    // empty during an overlap's grace). Taken up, so no second token is made beside it.
    const kept = await this.delivery.kept(record.value_path);
    const keptToken =
      kept && kept.rotation === record.id
        ? listed.find((token) => token.id === kept.token_id && token.id !== record.old_token_id && token.active)
        : undefined;
    if (kept && keptToken) {
      redactor.addSecret(kept.value);
      await saveTokenRecord(context.state, {
        ...record,
        step: 'issued',
        known_ids: listed.filter((token) => token !== keptToken).map((token) => token.id),
        new_token_id: keptToken.id,
        value_sha256: sha256(kept.value),
        last_error: null,
      });
      return {
        detail: `new token ${keptToken.id} taken up from ${record.value_path} (its record was lost); nothing sent`,
      };
    }
    return this.send(context, kind, { ...record, known_ids: listed.map((token) => token.id) }, 'send', old);
  }

  private async resume(
    context: StepContext,
    kind: TokenKind,
    record: TokenRecord,
    listed: readonly ListedToken[],
  ): Promise<ActionResult> {
    const kept = await this.delivery.kept(record.value_path);
    const keptToken =
      kept && kept.rotation === record.id
        ? listed.find((token) => token.id === kept.token_id && !record.known_ids.includes(token.id))
        : undefined;
    if (kept && keptToken?.active) {
      // The daemon died after keeping the answer and before recording it: carried on from the file, nothing sent.
      redactor.addSecret(kept.value);
      await saveTokenRecord(context.state, {
        ...record,
        step: 'issued',
        new_token_id: kept.token_id,
        value_sha256: sha256(kept.value),
        last_error: null,
      });
      return { detail: `new token ${kept.token_id} taken up from ${record.value_path}; nothing sent again` };
    }
    const orphans = listed.filter(
      (token) =>
        token.active &&
        !record.known_ids.includes(token.id) &&
        (token.family === record.family || token.name === record.name),
    );
    // Orphans stay unknown: a recovery refused before the forge acted must find its token again, not make another.
    const known = [
      ...new Set([...record.known_ids, ...listed.filter((token) => !orphans.includes(token)).map((token) => token.id)]),
    ];
    const newest = orphans.sort((a, b) => b.id - a.id)[0];
    if (newest) {
      // The lost answer's token: its value is known to nobody. Rotated (or replaced) by its id with the bot's credential.
      if (kind.rotate) return this.send(context, kind, { ...record, known_ids: known }, 'recover', newest);
      for (const orphan of orphans) await kind.revoke(context, record.holder, orphan.id);
      return this.send(context, kind, { ...record, known_ids: known }, 'send', newest);
    }
    const old = listed.find((token) => token.id === record.old_token_id);
    if (old?.active) return this.send(context, kind, { ...record, known_ids: known }, 'send', old);
    await saveTokenRecord(context.state, {
      ...record,
      step: 'closed',
      finished_at: context.now.toISOString(),
      closed_reason: `token ${record.old_token_id} is no longer active and no token it was rotated into is listed`,
    });
    return {
      outcome: 'stale',
      detail: `rotation ${record.id} closed: token ${record.old_token_id} is no longer active and no successor is listed`,
    };
  }

  /** Records `sending`, makes the call, and keeps the value before anything else. */
  private async send(
    context: StepContext,
    kind: TokenKind,
    record: TokenRecord,
    how: 'send' | 'recover',
    from: ListedToken,
  ): Promise<ActionResult> {
    const sending: TokenRecord = {
      ...record,
      step: 'sending',
      attempt: record.attempt + 1,
      sent_at: context.now.toISOString(),
    };
    await saveTokenRecord(context.state, sending, true);
    let issued: IssuedToken;
    try {
      issued =
        record.strategy === 'rotate' || how === 'recover'
          ? await rotateWith(kind, context, record, from.id)
          : await kind.create(
              context,
              record.holder,
              { name: record.name, scopes: from.scopes, access_level: from.access_level, username: from.username },
              record.expires_at,
            );
    } catch (error) {
      await saveTokenRecord(context.state, { ...sending, last_error: message(error) });
      throw error;
    }
    redactor.addSecret(issued.value);
    await this.delivery.keep(record.value_path, {
      token_id: issued.id,
      value: issued.value,
      expires_at: issued.expires_at,
      rotation: record.id,
    });
    await saveTokenRecord(context.state, {
      ...sending,
      step: 'issued',
      new_token_id: issued.id,
      value_sha256: sha256(issued.value),
      last_error: null,
    });
    const what =
      how === 'recover'
        ? `token ${from.id}, made by a call whose answer was lost, rotated into`
        : record.strategy === 'rotate'
          ? `token ${from.id} rotated into`
          : 'made';
    return {
      detail: `${what} new token ${issued.id} (expires ${issued.expires_at ?? 'never'}), kept in ${record.value_path}`,
    };
  }

  /**
   * issued → delivered (overlap) or done (rotate): each delivery not yet done is written from the value file and read
   * back; the new token must still be active afterwards (a person who revoked it meanwhile closes the rotation).
   */
  async deliver(params: StepParams, context: StepContext): Promise<ActionResult> {
    const record = await this.begin(context, params, 'issued');
    if ('already' in record) return record.already;
    const kept = await this.delivery.kept(record.value_path);
    if (!kept || kept.token_id !== record.new_token_id || sha256(kept.value) !== record.value_sha256) {
      await saveTokenRecord(context.state, {
        ...record,
        last_error: `value file ${record.value_path} does not hold new token ${record.new_token_id ?? '?'}`,
      });
      throw new Error(
        `value file ${record.value_path} does not hold new token ${record.new_token_id ?? '?'}: nothing delivered; a person must look`,
      );
    }
    redactor.addSecret(kept.value);
    let current = record;
    for (const delivery of record.deliveries) {
      const id = deliveryId(delivery);
      if (current.delivered.includes(id)) continue;
      try {
        await this.delivery.write(context, current, delivery, kept.value);
        const missing = await this.delivery.missing(context, delivery, record.value_sha256 ?? '');
        if (missing) throw new Error(`${missing} after it was written`);
      } catch (error) {
        await saveTokenRecord(context.state, { ...current, last_error: `${id}: ${message(error)}` });
        throw error;
      }
      current = { ...current, delivered: [...current.delivered, id] };
      await saveTokenRecord(context.state, current);
    }
    const stillActive =
      (await this.kinds.named(record.kind).list(context, record.holder))?.find(
        (token) => token.id === record.new_token_id,
      )?.active === true;
    if (!stillActive) {
      await saveTokenRecord(context.state, {
        ...current,
        step: 'closed',
        finished_at: context.now.toISOString(),
        closed_reason: `new token ${record.new_token_id ?? '?'} was revoked by someone during delivery`,
      });
      return {
        outcome: 'stale',
        detail: `new token ${record.new_token_id ?? '?'} was revoked by someone during delivery: rotation closed`,
      };
    }
    const done = record.strategy === 'rotate';
    await saveTokenRecord(context.state, {
      ...current,
      step: done ? 'done' : 'delivered',
      delivered_at: context.now.toISOString(),
      finished_at: done ? context.now.toISOString() : null,
      last_error: null,
    });
    const where = record.deliveries.map(deliveryId).join(', ');
    return {
      detail: `new token ${record.new_token_id ?? '?'} delivered to ${where} and read back${done ? '' : `; old token ${record.old_token_id} stays until ${new Date(context.now.getTime() + record.grace_ms).toISOString()}`}`,
    };
  }

  /** The new token is still listed and active: the old one goes only while its successor works. */
  async revokePrecondition(params: StepParams, context: StepContext): Promise<string | undefined> {
    const record = await loadTokenRecord(context.state, params.rotation);
    if (!record || record.step !== 'delivered') return undefined;
    const fresh = (await this.kinds.named(record.kind).list(context, record.holder))?.find(
      (token) => token.id === record.new_token_id,
    );
    if (!fresh?.active)
      return `new token ${record.new_token_id ?? '?'} is no longer active on ${record.holder.label}: old token ${record.old_token_id} is kept`;
    return undefined;
  }

  /**
   * delivered → done (overlap): every delivery is read back again first; one a person deleted or changed meanwhile sends
   * the rotation back to deliver it again, and the old token stays until then.
   */
  async revokeOld(params: StepParams, context: StepContext): Promise<ActionResult> {
    const record = await this.begin(context, params, 'delivered');
    if ('already' in record) return record.already;
    if (context.now.getTime() < Date.parse(record.delivered_at ?? '') + record.grace_ms)
      throw new TokenStepNotReadyError(`not run: the grace of rotation ${record.id} has not passed`);
    const missing: string[] = [];
    for (const delivery of record.deliveries) {
      const why = await this.delivery.missing(context, delivery, record.value_sha256 ?? '');
      if (why) missing.push(deliveryId(delivery));
    }
    if (missing.length > 0) {
      await saveTokenRecord(context.state, {
        ...record,
        step: 'issued',
        delivered: record.delivered.filter((id) => !missing.includes(id)),
        last_error: `no longer holds the new token: ${missing.join(', ')}`,
      });
      return {
        outcome: 'stale',
        detail: `${missing.join(', ')} no longer hold new token ${record.new_token_id ?? '?'}: delivered again before old token ${record.old_token_id} goes`,
      };
    }
    const revoked = await this.kinds.named(record.kind).revoke(context, record.holder, record.old_token_id);
    await saveTokenRecord(context.state, {
      ...record,
      step: 'done',
      finished_at: context.now.toISOString(),
      last_error: null,
    });
    return {
      detail: `old token ${record.old_token_id} ${revoked ? 'revoked' : 'was gone already'}; new token ${record.new_token_id ?? '?'} in use`,
    };
  }

  /** Any open step → closed: only the policy's own record changes; the forge is left as it is. */
  async close(params: CloseParams, context: StepContext): Promise<ActionResult> {
    const record = await loadTokenRecord(context.state, params.rotation);
    if (!record || record.generation !== params.generation || record.step === 'done' || record.step === 'closed')
      return { outcome: 'stale', detail: `rotation ${params.rotation} is not open at generation ${params.generation}` };
    await saveTokenRecord(context.state, {
      ...record,
      step: 'closed',
      finished_at: context.now.toISOString(),
      closed_reason: params.reason,
    });
    return { detail: `rotation ${record.id} closed: ${params.reason}` };
  }

  private async begin(
    context: StepContext,
    params: StepParams,
    at: 'issued' | 'delivered',
  ): Promise<TokenRecord | { already: ActionResult }> {
    const record = await loadTokenRecord(context.state, params.rotation);
    // Released, not failed: the replica (or the step of this pass) issuing it delivers it as soon as it has it.
    if (!record || record.generation < params.generation || record.step === 'sending')
      return {
        already: { outcome: 'stale', detail: `not run: rotation ${params.rotation} has not issued its new token yet` },
      };
    if (record.generation > params.generation || record.step === 'closed')
      return {
        already: { outcome: 'stale', detail: `rotation ${params.rotation} is closed or at a later generation` },
      };
    if (record.step !== at) {
      if (at === 'delivered' && record.step === 'issued')
        throw new TokenStepNotReadyError(`not run: rotation ${record.id} is not delivered; retried next pass`);
      return { already: { detail: `already done: rotation ${record.id} is at ${record.step}` } };
    }
    const counted = { ...record, attempt: record.attempt + 1 };
    await saveTokenRecord(context.state, counted);
    return counted;
  }
}

async function rotateWith(
  kind: TokenKind,
  context: StepContext,
  record: TokenRecord,
  tokenId: number,
): Promise<IssuedToken> {
  if (!kind.rotate) throw new Error(`a ${kind.noun} cannot be rotated; strategy overlap makes a new one`);
  return kind.rotate(context, record.holder, tokenId, record.expires_at);
}

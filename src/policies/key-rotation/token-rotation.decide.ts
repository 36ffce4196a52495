import { type Decision, SKIP } from '../../engine/policy';
import type { ListedToken, SelfToken, TokenHolder, TokenKind, TokenKinds, TokenListing } from './token-kind';
import {
  isTokenFinished,
  type ResolvedDelivery,
  type TokenRecord,
  tokenRotationId,
  valuePath,
} from './token-rotation.record';
import { MAX_TOKEN_LIFETIME_MS, type TokenRule } from './token-rotation.schema';
import { durationText } from './key-rotation.timing';

/**
 * Deciding what to do with each managed token, whatever its kind: pure. A token not under rotation is rotated (issue,
 * then deliver) or skipped with its expiry and why; one under rotation gets its remaining step. The record says what
 * the bot did; the listing says what the forge holds now, and wins: a new token a person revoked closes its rotation.
 */

export const ISSUE_TOKEN = 'issue_token';
export const DELIVER_TOKEN = 'deliver_token';
export const REVOKE_OLD_TOKEN = 'revoke_old_token';
export const CLOSE_TOKEN_ROTATION = 'close_token_rotation';

/** What the token kinds observed in a pass. */
export interface TokenSnapshot {
  readonly self: SelfToken;
  /** Per section, one listing per entry. */
  readonly listings: Readonly<Record<string, readonly TokenListing[]>>;
  /** Records of open rotations and of rotations of listed tokens, by id. */
  readonly records: Readonly<Record<string, TokenRecord>>;
  /** For each open rotation, its holder's tokens as listed now (revoked ones too); `unread` when they could not be. */
  readonly now: Readonly<Record<string, readonly ListedToken[] | 'gone' | 'unread'>>;
}

/** The settings the token decisions read besides the kinds' sections. */
export interface TokenSettings {
  readonly name: string;
  readonly secrets_dir: string;
  readonly on_rotate?: string;
  readonly on_rotate_env: readonly string[];
  readonly [section: string]: unknown;
}

export function decideTokens(kinds: TokenKinds, config: TokenSettings, snapshot: TokenSnapshot, now: Date): Decision[] {
  const decisions: Decision[] = [];
  const seen = new Set<string>();
  const newTokens = new Map(
    Object.values(snapshot.records).flatMap((record) =>
      record.new_token_id !== null ? [[`${record.kind}:${record.new_token_id}`, record] as const] : [],
    ),
  );
  for (const [section, kind] of kinds.entries()) {
    const rules = (config[section] ?? []) as readonly TokenRule[];
    (snapshot.listings[section] ?? []).forEach((listing, index) => {
      const rule = rules[index];
      if (!rule) return;
      for (const entry of listing.holders) {
        if ('unreadable' in entry) {
          decisions.push({
            action: SKIP,
            target: entry.holder.label,
            key: `${kind.name}-${String(entry.holder.ref).toLowerCase()}`,
            reason: `skip: ${entry.unreadable}; its tokens are left as they are`,
            params: {},
          });
          continue;
        }
        for (const token of [...entry.tokens].sort((a, b) => a.id - b.id)) {
          if (!rule.names.some((pattern) => pattern.test(token.name))) continue;
          const id = tokenRotationId(kind.name, entry.holder, token.id);
          if (seen.has(id)) continue;
          const target = `${kind.noun} ${token.id} "${token.name}" of ${entry.holder.label}`;
          const open = snapshot.records[id] !== undefined && !isTokenFinished(snapshot.records[id]);
          // Revoked tokens are listed so that an open rotation of one is found; otherwise they are history.
          if (!token.active && !open) {
            if (!token.revoked)
              decisions.push(
                skip(
                  target,
                  id,
                  `skip: ${expiryText(token).replace('expires', 'expired')}; an expired token cannot be rotated, a person makes a new one`,
                ),
              );
            continue;
          }
          seen.add(id);
          const replacing = newTokens.get(`${kind.name}:${token.id}`);
          if (replacing && !isTokenFinished(replacing)) {
            decisions.push(skip(target, id, `skip: new token of rotation ${replacing.id}, ${expiryText(token)}`));
            continue;
          }
          if (kind.mayBeDaemonToken === true && snapshot.self.tokenId === token.id) {
            decisions.push(
              skip(
                target,
                id,
                `skip: the daemon's own token (${expiryText(token)}): it is rotated through gitlab.token_file, never by a policy`,
              ),
            );
            continue;
          }
          const record = snapshot.records[id];
          if (record && !isTokenFinished(record)) {
            decisions.push(...continueRotation(record, target, snapshot, now));
            continue;
          }
          decisions.push(...startOrSkip(kind, config, rule, entry.holder, token, target, id, record, now));
        }
      }
    });
  }
  // Open rotations no listing showed (their old token revoked by the rotation, or no longer selected) still finish.
  for (const record of Object.values(snapshot.records).sort((a, b) => (a.id < b.id ? -1 : 1))) {
    if (seen.has(record.id) || isTokenFinished(record) || !kinds.has(record.kind)) continue;
    seen.add(record.id);
    decisions.push(
      ...continueRotation(
        record,
        `${kinds.named(record.kind).noun} ${record.old_token_id} "${record.name}" of ${record.holder.label}`,
        snapshot,
        now,
      ),
    );
  }
  return decisions;
}

function startOrSkip(
  kind: TokenKind,
  config: TokenSettings,
  rule: TokenRule,
  holder: TokenHolder,
  token: ListedToken,
  target: string,
  id: string,
  record: TokenRecord | undefined,
  now: Date,
): Decision[] {
  const due = tokenDue(rule, token, now);
  const finished = record
    ? ` (rotation ${record.id} ${record.step}${record.closed_reason ? `: ${record.closed_reason}` : ''})`
    : '';
  if (!due.rotate) return [skip(target, id, `${due.reason}${finished}`)];
  const deliveries = resolveDeliveries(kind, config, rule, holder, token);
  if ('problem' in deliveries)
    return [skip(target, id, `skip: ${due.reason.replace(/^rotate: /, '')}, but ${deliveries.problem}`)];
  const generation = record ? record.generation + 1 : 1;
  const lifetime = Math.min(rule.lifetime, MAX_TOKEN_LIFETIME_MS);
  const expiresAt = new Date(now.getTime() + lifetime).toISOString().slice(0, 10);
  const rotation = { id, generation, attempt: 0 };
  const how =
    rule.strategy === 'rotate'
      ? `rotate it (the forge revokes token ${token.id} at once)`
      : `make a new token, revoke token ${token.id} ${durationText(rule.grace)} after delivery`;
  return [
    {
      action: ISSUE_TOKEN,
      target,
      key: stepKey(rotation, 'issue'),
      reason: `${due.reason}: ${how}, new expiry ${expiresAt}`,
      params: {
        rotation: id,
        generation,
        kind: kind.name,
        holder: { ref: holder.ref, label: holder.label, ...(holder.scope ? { scope: holder.scope } : {}) },
        old_token_id: token.id,
        name: token.name,
        family: token.family,
        scopes: [...token.scopes],
        ...(token.access_level !== undefined ? { access_level: token.access_level } : {}),
        strategy: rule.strategy,
        grace_ms: rule.grace,
        expires_at: expiresAt,
        value_path: valuePath(config.secrets_dir, config.name, id),
        deliveries: deliveries.list,
      },
      details: deliveries.list.map((delivery) => `deliver to ${describe(delivery)}`),
    },
    deliver(target, rotation, 'deliver the new token', rule.strategy === 'overlap' ? rule.grace : undefined),
  ];
}

/** The remaining step of a rotation under way, or its closing when the forge contradicts it. */
function continueRotation(record: TokenRecord, target: string, snapshot: TokenSnapshot, now: Date): Decision[] {
  const rotation = { id: record.id, generation: record.generation, attempt: record.attempt };
  const failed = record.last_error ? [`last attempt failed: ${record.last_error}`] : [];
  const listed = snapshot.now[record.id];
  if (listed === 'unread')
    return [
      skip(
        target,
        record.id,
        `skip: ${record.holder.label} could not be read; rotation ${record.id} waits at ${record.step}`,
      ),
    ];
  // A 404 is deleted or out of the token's sight alike: not proof that the tokens are gone, so the rotation waits.
  if (listed === 'gone')
    return [
      skip(
        target,
        record.id,
        `skip: ${record.holder.label} answers 404 (deleted, or out of the token's sight); rotation ${record.id} waits at ${record.step}`,
      ),
    ];
  if (record.step === 'sending') {
    // Its answer never reached the value file: the action looks for the token it made before it sends anything.
    return [
      {
        action: ISSUE_TOKEN,
        target,
        key: stepKey({ ...rotation, attempt: 0 }, 'issue'),
        reason: `resume: the answer to the call sent ${record.sent_at ?? '?'} was not kept; find its token or send again`,
        params: { rotation: record.id, generation: record.generation },
        details: failed,
      },
      deliver(target, rotation, 'deliver the new token', record.strategy === 'overlap' ? record.grace_ms : undefined),
    ];
  }
  const fresh = listed?.find((token) => token.id === record.new_token_id);
  if (listed && (!fresh || !fresh.active)) {
    return [
      close(
        target,
        record,
        `new token ${record.new_token_id ?? '?'} was ${fresh ? 'revoked' : 'removed'} by someone: a person's revocation wins, nothing more is delivered`,
      ),
    ];
  }
  if (record.step === 'issued') {
    const grace = record.strategy === 'overlap' ? record.grace_ms : undefined;
    return [
      {
        ...deliver(
          target,
          rotation,
          `resume: deliver new token ${record.new_token_id ?? '?'} from ${record.value_path}`,
          grace,
        ),
        details: failed,
      },
    ];
  }
  // delivered: only an overlap waits here, for its grace.
  const until = Date.parse(record.delivered_at ?? '') + record.grace_ms;
  if (Number.isNaN(until)) return [skip(target, record.id, `skip: rotation ${record.id} has no delivery time`)];
  if (now.getTime() < until)
    return [
      skip(
        target,
        record.id,
        `skip: keep old token ${record.old_token_id} until ${new Date(until).toISOString()} (grace ${durationText(record.grace_ms)})`,
      ),
    ];
  return [
    {
      action: REVOKE_OLD_TOKEN,
      target,
      key: stepKey(rotation, 'revoke_old'),
      reason: `revoke old token ${record.old_token_id}: grace ${durationText(record.grace_ms)} passed, new token ${record.new_token_id ?? '?'} delivered`,
      params: { rotation: record.id, generation: record.generation },
      details: failed,
    },
  ];
}

/** `grace_ms`: an overlap's, so the next pass is planned for when it ends. */
function deliver(
  target: string,
  rotation: { id: string; generation: number; attempt: number },
  reason: string,
  grace: number | undefined,
): Decision {
  return {
    action: DELIVER_TOKEN,
    target,
    key: stepKey(rotation, 'deliver'),
    reason,
    params: {
      rotation: rotation.id,
      generation: rotation.generation,
      ...(grace !== undefined ? { grace_ms: grace } : {}),
    },
  };
}

function close(target: string, record: TokenRecord, reason: string): Decision {
  return {
    action: CLOSE_TOKEN_ROTATION,
    target,
    key: `${record.id}#${record.generation}:close`,
    reason: `close: ${reason}`,
    params: { rotation: record.id, generation: record.generation, reason },
  };
}

function skip(target: string, id: string, reason: string): Decision {
  return { action: SKIP, target, key: id, reason, params: { rotation: id } };
}

/** The issue step's key has no attempt: one claim per token and generation, whoever retries it (see the ledger). */
function stepKey(rotation: { id: string; generation: number; attempt: number }, step: string): string {
  return `${rotation.id}${rotation.generation > 1 ? `#${rotation.generation}` : ''}:${step}${step === 'issue' ? '' : `:${rotation.attempt}`}`;
}

/** Due when it expires within before_expiry, or is older than max_age; plan shows the expiry either way. */
export function tokenDue(
  rule: Pick<TokenRule, 'before_expiry' | 'max_age'>,
  token: Pick<ListedToken, 'expires_at' | 'created_at'>,
  now: Date,
): { rotate: boolean; reason: string } {
  const expires = token.expires_at === null ? NaN : Date.parse(token.expires_at);
  if (!Number.isNaN(expires) && expires - now.getTime() <= rule.before_expiry) {
    return {
      rotate: true,
      reason: `rotate: expires ${day(expires)}, within before_expiry ${durationText(rule.before_expiry)}`,
    };
  }
  const created = token.created_at === null ? NaN : Date.parse(token.created_at);
  if (rule.max_age !== undefined && !Number.isNaN(created) && now.getTime() - created >= rule.max_age) {
    return {
      rotate: true,
      reason: `rotate: created ${day(created)}, older than max_age ${durationText(rule.max_age)} (${expiryText(token)})`,
    };
  }
  return {
    rotate: false,
    reason: `skip: ${expiryText(token)}, rotates ${durationText(rule.before_expiry)} before${rule.max_age !== undefined ? ` or at max_age ${durationText(rule.max_age)}` : ''}`,
  };
}

function expiryText(token: Pick<ListedToken, 'expires_at'>): string {
  const expires = token.expires_at === null ? NaN : Date.parse(token.expires_at);
  return Number.isNaN(expires) ? 'never expires' : `expires ${day(expires)}`;
}

function day(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** The rule's deliveries for one token, resolved; or why one cannot be (a variable with nowhere to go). */
function resolveDeliveries(
  kind: TokenKind,
  config: TokenSettings,
  rule: TokenRule,
  holder: TokenHolder,
  token: ListedToken,
): { list: ResolvedDelivery[] } | { problem: string } {
  const list: ResolvedDelivery[] = [];
  for (const delivery of rule.deliver) {
    if ('variable' in delivery) {
      const variable = delivery.variable;
      const place =
        variable.project !== undefined
          ? { scope: 'projects' as const, ref: variable.project }
          : variable.group !== undefined
            ? { scope: 'groups' as const, ref: variable.group }
            : kind.variablePlace(holder);
      if (!place)
        return {
          problem: `variable ${variable.key} names no project or group, and a ${kind.noun} has none of its own`,
        };
      list.push({
        type: 'variable',
        scope: place.scope,
        place: place.ref,
        key: variable.key,
        environment_scope: variable.environment_scope,
        protected: variable.protected,
        masked: variable.masked,
        hidden: variable.masked_and_hidden,
      });
    } else if ('file' in delivery) {
      list.push({
        type: 'file',
        path: delivery.file.replaceAll('{holder}', safe(String(holder.ref))).replaceAll('{name}', safe(token.name)),
      });
    } else {
      if (config.on_rotate === undefined) return { problem: 'a delivery names on_rotate and the policy has none' };
      list.push({ type: 'hook', command: config.on_rotate, env: [...config.on_rotate_env] });
    }
  }
  return { list };
}

function safe(part: string): string {
  return part.replace(/[^A-Za-z0-9_.-]/g, '_').replace(/^\.+/, '_');
}

function describe(delivery: ResolvedDelivery): string {
  switch (delivery.type) {
    case 'variable':
      return `variable ${delivery.key} (${delivery.environment_scope}) of ${delivery.scope.slice(0, -1)} ${delivery.place}${delivery.hidden ? ', masked and hidden' : delivery.masked ? ', masked' : ''}${delivery.protected ? ', protected' : ''}`;
    case 'file':
      return `file ${delivery.path} (0600)`;
    case 'hook':
      return 'on_rotate (value on standard input)';
  }
}

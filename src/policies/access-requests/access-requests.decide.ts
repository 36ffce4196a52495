import { formatDuration } from '../../config/duration';
import { firstPositions } from '../../engine/order';
import { type Decision, SKIP } from '../../engine/policy';
import type { UserState } from '../../gitlab/types/common';
import type { AdminUser, PublicUser } from '../../gitlab/types/users';
import { isAdminView } from '../../gitlab/types/users';
import { approveParams, requestParams, type SourceKind } from './access-requests.params';
import { type AccessRequestsConfig, levelName, type Rule, type RuleConditions } from './access-requests.schema';

/**
 * Deciding each pending access request: pure, no I/O, no clock. The first rule whose conditions all hold decides. A
 * rule that needs a fact the token cannot read now, before any rule decided, leaves the request pending: neither an
 * approval nor a denial rests on a guess. A blocked user is never approved, whatever a rule says.
 */

export const APPROVE = 'approve';
export const DENY = 'deny';

/** A pending request as the forge lists it; `id` is the requester's user id. */
export interface PendingRequest {
  readonly id: number;
  readonly username: string;
  readonly state: UserState;
  readonly requested_at: string;
}

export interface SourceSnapshot {
  readonly kind: SourceKind;
  /** The group or project as configured (a GroupRef or ProjectRef: an id or a full path). */
  readonly ref: string | number;
  readonly requests: readonly PendingRequest[];
}

/**
 * A requester's record as the token saw it: the administrator view (email, two_factor_enabled, external,
 * confirmed_at) or the public view; null when the forge no longer knows the user.
 */
export type Requester = PublicUser | AdminUser | null;

export interface AccessRequestsSnapshot {
  /** Whether the token is an administrator's (`GET /user` said `is_admin: true`). */
  readonly admin: boolean;
  readonly sources: readonly SourceSnapshot[];
  /** By user id, each read once per pass; a user missing here was not read, and nothing is assumed about them. */
  readonly users: ReadonlyMap<number, Requester>;
}

/** One condition of a rule: whether it holds, and the fact that says so (`two-factor on`, `email unknown: …`). */
interface Verdict {
  readonly holds: boolean;
  readonly text: string;
  /** The fact could not be read (set only then), and why: the condition neither holds nor fails. */
  readonly unknown?: { readonly what: string; readonly why: string };
}

/** What a condition needs to know about the requester. */
interface Subject {
  readonly request: PendingRequest;
  /** Undefined: not read in this pass. */
  readonly user: Requester | undefined;
  readonly admin: boolean;
  readonly now: Date;
}

const DAY_MS = 86_400_000;

/** Why a field of the administrator view is unknown for `subject`. */
function unknownWhy(subject: Subject): string {
  if (subject.user === undefined) return 'the user record was not read';
  if (subject.user === null) return 'the user record was not found';
  if (!isAdminView(subject.user))
    return subject.admin ? 'the forge answered with the public view' : "the token is not an administrator's";
  return 'the user record does not show it';
}

/**
 * A field of the administrator view, or undefined when the record lacks it (a public view, a user not found, or a
 * forge that left it out). Read defensively: what is typed is what the Users API documents, not what every forge sends.
 */
function adminField(subject: Subject, field: 'email' | 'two_factor_enabled' | 'external' | 'confirmed_at'): unknown {
  const user = subject.user;
  if (!user || !isAdminView(user)) return undefined;
  return (user as Partial<Record<typeof field, unknown>>)[field];
}

/** A field both views carry (`bot`, `created_at`, `state`); undefined when the record is missing or lacks it. */
function publicField(subject: Subject, field: 'bot' | 'created_at' | 'state'): unknown {
  const user = subject.user;
  if (!user) return undefined;
  return (user as Partial<Record<typeof field, unknown>>)[field];
}

function unknown(what: string, subject: Subject, why = unknownWhy(subject)): Verdict {
  return { holds: false, unknown: { what, why }, text: `${what} unknown: ${why}` };
}

/** `{bot: true}` vs the record: the fact in words either way. */
function booleanVerdict(
  wanted: boolean,
  actual: unknown,
  what: string,
  yes: string,
  no: string,
  subject: Subject,
): Verdict {
  if (typeof actual !== 'boolean') return unknown(what, subject);
  return { holds: actual === wanted, text: actual ? yes : no };
}

/** A length of time in its largest whole unit, rounded down, for reasons (`31d`, `5h`, `12m`). */
export function roughDuration(ms: number): string {
  const units: Array<[string, number]> = [
    ['d', DAY_MS],
    ['h', 3_600_000],
    ['m', 60_000],
  ];
  for (const [unit, size] of units) if (ms >= size) return `${Math.floor(ms / size)}${unit}`;
  return `${Math.max(0, Math.floor(ms / 1000))}s`;
}

/** Every given condition of `when`, in the order of the schema, each with its verdict. */
function verdicts(when: RuleConditions | undefined, subject: Subject): Verdict[] {
  if (!when) return [];
  const out: Verdict[] = [];
  const { request } = subject;
  if (when.usernames) {
    const matched = when.usernames.find((pattern) => pattern.test(request.username));
    out.push(
      matched
        ? { holds: true, text: `username matches "${matched.source}"` }
        : { holds: false, text: `username ${request.username} not matched` },
    );
  }
  if (when.email_domains) {
    const email = adminField(subject, 'email');
    const at = typeof email === 'string' ? email.lastIndexOf('@') : -1;
    if (typeof email !== 'string' || at < 0) {
      out.push(unknown('email', subject));
    } else {
      // Exact and case-insensitive: sub.acme.com is another domain, and a suffix match would let anyone in.
      const domain = email.slice(at + 1).toLowerCase();
      const listed = when.email_domains.includes(domain);
      out.push({ holds: listed, text: listed ? `email domain ${domain}` : `email domain ${domain} not listed` });
    }
  }
  if (when.two_factor !== undefined) {
    out.push(
      booleanVerdict(
        when.two_factor,
        adminField(subject, 'two_factor_enabled'),
        'two-factor',
        'two-factor on',
        'two-factor off',
        subject,
      ),
    );
  }
  if (when.external !== undefined) {
    out.push(
      booleanVerdict(when.external, adminField(subject, 'external'), 'external', 'external', 'not external', subject),
    );
  }
  if (when.bot !== undefined) {
    // The Users API shows `bot` in the public view only; a record without it leaves the condition unknown.
    const bot = publicField(subject, 'bot');
    out.push(
      typeof bot === 'boolean'
        ? { holds: bot === when.bot, text: bot ? 'a bot' : 'not a bot' }
        : unknown('bot', subject, subject.user ? 'the user record does not show it' : unknownWhy(subject)),
    );
  }
  if (when.confirmed !== undefined) {
    const confirmedAt = adminField(subject, 'confirmed_at');
    // In the administrator view, null means "not confirmed"; a missing field means nothing is known.
    if (confirmedAt === undefined || (confirmedAt !== null && typeof confirmedAt !== 'string'))
      out.push(unknown('confirmed', subject));
    else
      out.push({
        holds: (confirmedAt !== null) === when.confirmed,
        text: confirmedAt !== null ? 'email confirmed' : 'email not confirmed',
      });
  }
  if (when.state !== undefined) {
    const state = effectiveState(subject);
    out.push({ holds: state === when.state, text: `state ${state}` });
  }
  if (when.min_account_age !== undefined) {
    const createdAt = publicField(subject, 'created_at');
    const created = typeof createdAt === 'string' ? Date.parse(createdAt) : NaN;
    if (Number.isNaN(created)) {
      out.push(
        unknown('account age', subject, subject.user ? 'the user record has no creation time' : unknownWhy(subject)),
      );
    } else {
      const age = subject.now.getTime() - created;
      const min = formatDuration(when.min_account_age);
      out.push(
        age >= when.min_account_age
          ? { holds: true, text: `account older than ${min}` }
          : { holds: false, text: `account ${roughDuration(age)} old, younger than ${min}` },
      );
    }
  }
  return out;
}

/** Blocked when either the request or the user record says so: the stricter answer wins. */
function effectiveState(subject: Subject): UserState {
  const recorded = publicField(subject, 'state');
  return subject.request.state === 'blocked' || recorded === 'blocked' ? 'blocked' : 'active';
}

function ruleAction(rule: Rule): string {
  return rule.approve !== undefined ? `approve as ${levelName(rule.approve)}` : 'deny';
}

interface RuleResult {
  readonly index: number;
  readonly rule: Rule;
  readonly verdicts: readonly Verdict[];
  /** All conditions hold (for an approve rule: and the user is not blocked). */
  readonly decides: boolean;
  /** All conditions hold but the rule approves a blocked user. */
  readonly blockedApproval: boolean;
  /** No condition fails, but one could not be read: whether the rule decides is not known. */
  readonly undetermined: boolean;
}

function evaluate(rule: Rule, index: number, subject: Subject): RuleResult {
  const list = verdicts(rule.when, subject);
  const allHold = list.every((v) => v.holds);
  const blockedApproval = allHold && rule.approve !== undefined && effectiveState(subject) === 'blocked';
  const undetermined =
    list.every((v) => v.holds || v.unknown !== undefined) && list.some((v) => v.unknown !== undefined);
  return { index, rule, verdicts: list, decides: allHold && !blockedApproval, blockedApproval, undetermined };
}

/** `email, two-factor unknown: the token is not an administrator's`: the facts missing, by why. */
function unknownFacts(verdicts: readonly Verdict[]): string {
  const byWhy = new Map<string, string[]>();
  for (const { unknown } of verdicts)
    if (unknown) byWhy.set(unknown.why, [...(byWhy.get(unknown.why) ?? []), unknown.what]);
  return [...byWhy].map(([why, whats]) => `${whats.join(', ')} unknown: ${why}`).join('; ');
}

/** `rule 1 (email domain acme.com, two-factor on)`: the rule and the facts that made it hold. */
function matchedText(result: RuleResult): string {
  const facts = result.verdicts.map((v) => v.text);
  return `rule ${result.index + 1} (${facts.length > 0 ? facts.join(', ') : 'no conditions'})`;
}

/** `rule 2: username bob not matched`: why a rule did not decide, by its first condition that failed. */
function missText(result: RuleResult): string {
  if (result.blockedApproval) return `rule ${result.index + 1}: user is blocked, never approved`;
  const failed = result.verdicts.find((v) => !v.holds);
  return `rule ${result.index + 1}: ${failed?.text ?? 'not matched'}`;
}

/** One line per rule for `plan`: every condition's fact, so a person sees all that was looked at. */
function detailLine(result: RuleResult): string {
  const status = result.decides
    ? 'matched'
    : result.blockedApproval
      ? 'not applied (user is blocked)'
      : result.undetermined
        ? 'not known'
        : 'not matched';
  const facts = result.verdicts.map((v) => `${v.holds ? '✓' : v.unknown ? '?' : '✗'} ${v.text}`);
  return `rule ${result.index + 1} ${ruleAction(result.rule)}: ${status}${facts.length > 0 ? ` (${facts.join('; ')})` : ''}`;
}

function sourceLabel(source: SourceSnapshot): string {
  return typeof source.ref === 'number' ? `${source.kind} ${source.ref}` : source.ref;
}

function decideOne(
  config: AccessRequestsConfig,
  source: SourceSnapshot,
  request: PendingRequest,
  snapshot: AccessRequestsSnapshot,
  now: Date,
): Decision {
  const subject: Subject = { request, user: snapshot.users.get(request.id), admin: snapshot.admin, now };
  const target = { source: source.kind, id: source.ref, userId: request.id, requestedAt: request.requested_at };
  const base = {
    target: `${sourceLabel(source)}: ${request.username} (user ${request.id})`,
    // requested_at: a user denied or removed who asks again is a new request, decided afresh.
    key: `${source.kind}:${source.ref}:${request.id}:${request.requested_at}`,
    params: requestParams(target),
  };

  const results = config.rules.map((rule, index) => evaluate(rule, index, subject));
  const requestedMs = Date.parse(request.requested_at);
  const waited = Number.isNaN(requestedMs) ? undefined : now.getTime() - requestedMs;
  const details = [
    `requested ${request.requested_at}${waited !== undefined ? ` (${roughDuration(waited)} ago)` : ''}; ${snapshot.admin ? 'administrator view' : "public view: the token is not an administrator's"}`,
    ...results.map(detailLine),
  ];

  // First match in the rules' order: a rule not known to match or not stops there, since it might have decided.
  const first = results.find((r) => r.decides || r.undetermined);
  if (first?.undetermined) {
    return {
      ...base,
      action: SKIP,
      reason: `leave: rule ${first.index + 1} cannot be decided (${unknownFacts(first.verdicts)}); neither approved nor denied on a fact the token cannot read`,
      details,
    };
  }
  const deciding = first;
  if (deciding?.rule.approve !== undefined) {
    return {
      ...base,
      action: APPROVE,
      reason: `approve as ${levelName(deciding.rule.approve)}: ${matchedText(deciding)}`,
      params: approveParams({ ...target, accessLevel: deciding.rule.approve }),
      details,
    };
  }
  if (deciding) return { ...base, action: DENY, reason: `deny: ${matchedText(deciding)}`, details };

  // No rule decided: `otherwise`, then the age of the request.
  const misses = results.map(missText).join('; ');
  const why = misses ? ` (${misses})` : '';
  if (config.otherwise === 'deny')
    return { ...base, action: DENY, reason: `deny: no rule matched, otherwise deny${why}`, details };
  // An unreadable requested_at is never taken as old: denying on a guess is no better than approving on one.
  if (config.deny_pending_after !== undefined && waited !== undefined && waited > config.deny_pending_after) {
    return {
      ...base,
      action: DENY,
      reason: `deny: pending ${roughDuration(waited)}, longer than deny_pending_after ${formatDuration(config.deny_pending_after)}`,
      details,
    };
  }
  const blocked = results.find((r) => r.blockedApproval);
  if (blocked)
    return {
      ...base,
      action: SKIP,
      reason: `leave: user is blocked, never approved (rule ${blocked.index + 1} would ${ruleAction(blocked.rule)})`,
      details,
    };
  return { ...base, action: SKIP, reason: `leave: no rule matched${why}`, details };
}

/**
 * One decision per pending request: approve, deny, or a skip that says why it is left to people. Ordered by group
 * then project as configured, then oldest request first, so a pass capped by `max_actions_per_run` works off the
 * longest waiting first and `plan` reads the same every time.
 */
export function decideAccessRequests(
  config: AccessRequestsConfig,
  snapshot: AccessRequestsSnapshot,
  now: Date,
): Decision[] {
  // Groups before projects; within each, those the file names in its order, then those globs found as observed
  // (discovery sorts them by path).
  const written = (kind: SourceKind, items: ReadonlyArray<{ kind: string; id?: number; path?: string }>) =>
    items.map((item) => `${kind}:${item.kind === 'id' ? item.id : item.path}`);
  const configured = [
    ...written('group', config.groups?.explicit ?? []),
    ...written('project', config.projects?.explicit ?? []),
  ];
  const positions = firstPositions(configured);
  const kindRank = (source: SourceSnapshot): number => (source.kind === 'group' ? 0 : 1);
  const order = (source: SourceSnapshot): number => positions.get(`${source.kind}:${source.ref}`) ?? configured.length;
  const sources = snapshot.sources
    .map((source, position) => ({ source, position }))
    .sort(
      (a, b) => kindRank(a.source) - kindRank(b.source) || order(a.source) - order(b.source) || a.position - b.position,
    );

  const decisions: Decision[] = [];
  for (const { source } of sources) {
    const requests = [...source.requests].sort((a, b) => compareTime(a.requested_at, b.requested_at) || a.id - b.id);
    for (const request of requests) decisions.push(decideOne(config, source, request, snapshot, now));
  }
  return decisions;
}

/** Oldest first; an unreadable time sorts last. */
function compareTime(a: string, b: string): number {
  const x = Date.parse(a);
  const y = Date.parse(b);
  if (Number.isNaN(x) || Number.isNaN(y)) return Number.isNaN(x) ? (Number.isNaN(y) ? 0 : 1) : -1;
  return x - y;
}

import type { ObserveContext, StepContext } from '../../engine/policy';
import { ApiError } from '../../gitlab/transport/errors';
import type { ListedToken, SelfToken, TokenKinds, TokenListing } from './token-kind';
import type { TokenSettings, TokenSnapshot } from './token-rotation.decide';
import { holderKey } from './token-rotation.listing';
import {
  isTokenFinished,
  loadTokenRecord,
  openTokenRotations,
  type TokenRecord,
  tokenRotationId,
} from './token-rotation.record';

/** Nothing configured, nothing read: a policy of keys alone sends no request for tokens. */
const NOTHING: TokenSnapshot = { self: { tokenId: undefined, userId: 0 }, listings: {}, records: {}, now: {} };

/**
 * Reading what the token decisions rest on: the daemon's own token (never rotated by a policy), each entry's holders
 * and their tokens, the records of open rotations and of listed tokens, and for each open rotation its holder's
 * tokens as listed now (revoked ones too), so decide sees a new token a person revoked.
 */
export async function observeTokens(
  kinds: TokenKinds,
  config: TokenSettings,
  context: ObserveContext,
): Promise<TokenSnapshot> {
  const sections = kinds.entries().filter(([section]) => ((config[section] as unknown[] | undefined) ?? []).length > 0);
  const open = await openTokenRotations(context.state);
  if (sections.length === 0 && open.length === 0) return NOTHING;
  const self = await selfToken(context);
  const listings: Record<string, TokenListing[]> = {};
  const ids = new Set(open);
  for (const [section, kind] of sections) {
    listings[section] = await kind.observe(config[section] as never, context, self);
    for (const listing of listings[section]) {
      for (const entry of listing.holders)
        if ('tokens' in entry)
          for (const token of entry.tokens) ids.add(tokenRotationId(kind.name, entry.holder, token.id));
    }
  }
  const records: Record<string, TokenRecord> = {};
  for (const id of [...ids].sort()) {
    const record = await loadTokenRecord(context.state, id);
    if (record && kinds.has(record.kind)) records[id] = record;
  }
  const lists = new Map<string, Promise<readonly ListedToken[] | 'gone' | 'unread'>>();
  const now: Record<string, readonly ListedToken[] | 'gone' | 'unread'> = {};
  for (const record of Object.values(records)) {
    if (isTokenFinished(record)) continue;
    const key = `${record.kind}:${holderKey(record.holder)}`;
    if (!lists.has(key)) lists.set(key, listNow(kinds, record, context));
    now[record.id] = await (lists.get(key) as Promise<readonly ListedToken[] | 'gone' | 'unread'>);
  }
  return { self, listings, records, now };
}

async function listNow(
  kinds: TokenKinds,
  record: TokenRecord,
  context: ObserveContext,
): Promise<readonly ListedToken[] | 'gone' | 'unread'> {
  try {
    return (await kinds.named(record.kind).list(context, record.holder)) ?? 'gone';
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    context.unobserved.record(record.holder.label, error);
    return 'unread';
  }
}

/** The token the daemon authenticates with; unknown when the forge does not say (older versions). */
async function selfToken(context: StepContext): Promise<SelfToken> {
  try {
    const self = await context.client.personalAccessTokens.self();
    return { tokenId: self.id, userId: self.user_id };
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    context.logger.warn(
      `the daemon's own token could not be read (${error.summary}); it is told apart by nothing else`,
    );
    return { tokenId: undefined, userId: 0 };
  }
}

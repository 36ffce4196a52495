import { observeTargets } from '../../engine/observe-targets';
import type { ObserveContext } from '../../engine/policy';
import { NotFoundError } from '../../gitlab/transport/errors';
import type { ListedToken, TokenHolder, TokenListing } from './token-kind';

/**
 * What every token kind's observe does once it knows each entry's holders: reads each holder once (a holder two
 * entries select is read once), on its own (one the forge refuses is recorded as unobserved and its entry names it
 * unreadable; the others go on), and hands each entry its holders' tokens in the order selected.
 */
export async function listHolders(
  context: ObserveContext,
  selected: readonly (readonly TokenHolder[])[],
  read: (holder: TokenHolder) => Promise<ListedToken[]>,
): Promise<TokenListing[]> {
  const distinct = new Map<string, TokenHolder>();
  for (const holder of selected.flat()) if (!distinct.has(holderKey(holder))) distinct.set(holderKey(holder), holder);
  const holders = [...distinct.values()];
  const tokens = await observeTargets(context, holders, (holder) => ({ target: holder.label, listed: true }), read);
  const byKey = new Map(holders.map((holder, index) => [holderKey(holder), tokens[index]] as const));
  return selected.map((entry) => ({
    holders: entry.map((holder) => {
      const listed = byKey.get(holderKey(holder));
      return listed ? { holder, tokens: listed } : { holder, unreadable: `${holder.label} could not be read` };
    }),
  }));
}

/** A holder as one key: the forge routes paths regardless of case. */
export function holderKey(holder: TokenHolder): string {
  return holder.label.toLowerCase();
}

/** Every token of an async listing, or undefined when the forge answers 404 for its holder. */
export async function allOrGone<T>(listing: AsyncIterable<T>): Promise<T[] | undefined> {
  const items: T[] = [];
  try {
    for await (const item of listing) items.push(item);
  } catch (error) {
    if (error instanceof NotFoundError) return undefined;
    throw error;
  }
  return items;
}

/** Runs a removal; false when the forge no longer has what it removes (404). */
export async function removed(remove: () => Promise<void>): Promise<boolean> {
  try {
    await remove();
    return true;
  } catch (error) {
    if (error instanceof NotFoundError) return false;
    throw error;
  }
}

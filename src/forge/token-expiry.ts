import {
  ApiError,
  ForbiddenError,
  type GitlabClient,
  NotFoundError,
  UnauthorizedError,
  UnexpectedAnswerError,
} from '../gitlab';

/**
 * When the daemon's own token stops working, as `GET /personal_access_tokens/self` says: the forge has required an
 * expiry (at most a year) since 16.0, and a token that lapses silences the bot. Read by the daemon (the gauge, the
 * console) and `doctor` (a warning 30 days before, a failure 7 days before).
 */
export type TokenExpiry =
  | { readonly state: 'expires'; readonly date: string }
  | { readonly state: 'never' }
  /** `passing`: the forge could not be asked now (down, 5xx); the answer may come at the next look. */
  | { readonly state: 'unknown'; readonly reason: string; readonly passing?: boolean };

export const TOKEN_EXPIRY_WARNING_DAYS = 30;
export const TOKEN_EXPIRY_FAILURE_DAYS = 7;

const DAY_MS = 24 * 60 * 60 * 1000;

export async function readTokenExpiry(client: GitlabClient): Promise<TokenExpiry> {
  try {
    const self = await client.personalAccessTokens.self();
    return self.expires_at === null ? { state: 'never' } : { state: 'expires', date: self.expires_at };
  } catch (error) {
    const refused =
      error instanceof UnexpectedAnswerError ||
      (error instanceof ApiError && error.status >= 400 && error.status < 500 && error.status !== 429);
    return { state: 'unknown', reason: whyUnknown(error), ...(refused ? {} : { passing: true }) };
  }
}

function whyUnknown(error: unknown): string {
  const answered = error instanceof ApiError ? `GET /personal_access_tokens/self answered ${error.status}` : '';
  // Before GitLab 15.5 there is no `self`; OAuth and CI job tokens may not read a personal access token's record.
  if (error instanceof NotFoundError)
    return `${answered}: a forge before GitLab 15.5, or a token that is not a personal, project or group access token`;
  if (error instanceof UnauthorizedError || error instanceof ForbiddenError)
    return `${answered}: this kind of token cannot read its own record (an OAuth or CI job token)`;
  if (error instanceof UnexpectedAnswerError)
    return `the answer to GET /personal_access_tokens/self has no readable expiry: ${error.message}`;
  return `not readable now: ${error instanceof Error ? error.message : String(error)}`;
}

/** The expiry as epoch seconds (00:00 UTC of the day: the forge's tokens stop at the start of their expiry day). */
export function expirySeconds(date: string): number {
  return Date.parse(`${date}T00:00:00Z`) / 1000;
}

/** Whole days left before the token stops, rounded down; negative once it has. */
export function daysLeft(date: string, nowMs: number): number {
  return Math.floor((expirySeconds(date) * 1000 - nowMs) / DAY_MS);
}

/** How `doctor` judges it: a failure within 7 days, a warning within 30. */
export function expiryVerdict(
  expiry: TokenExpiry,
  nowMs: number,
): { level: 'ok' | 'warning' | 'failure'; words: string } {
  if (expiry.state === 'never') return { level: 'ok', words: 'does not expire' };
  if (expiry.state === 'unknown')
    return { level: 'warning', words: `its expiry cannot be read (${expiry.reason}); watch it yourself` };
  const days = daysLeft(expiry.date, nowMs);
  const remainingMs = expirySeconds(expiry.date) * 1000 - nowMs;
  const when =
    remainingMs <= 0
      ? `expired on ${expiry.date}`
      : `expires on ${expiry.date}, in ${days} day${days === 1 ? '' : 's'}`;
  if (remainingMs <= TOKEN_EXPIRY_FAILURE_DAYS * DAY_MS)
    return { level: 'failure', words: `${when}: rotate it now, or the daemon stops` };
  if (remainingMs <= TOKEN_EXPIRY_WARNING_DAYS * DAY_MS)
    return { level: 'warning', words: `${when}: rotate it before it lapses` };
  return { level: 'ok', words: when };
}

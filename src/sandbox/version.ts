/**
 * The version the sandbox says it is: what `GET /version` answers (GitLab's public API docs, Version API; beyond the
 * forge's API specification), a release number tools can compare and a revision that says it is the sandbox, and the
 * `User-Agent` of its webhook deliveries.
 */
export const SANDBOX_VERSION = { version: '17.5.0', revision: 'sandbox' } as const;

/** `GET /version` (GitLab's public API docs, Version API; the forge's API specification does not cover it). */
export interface ForgeVersion {
  /** e.g. `17.5.0-ee`. */
  version: string;
  revision: string;
}

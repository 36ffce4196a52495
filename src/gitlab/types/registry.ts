import type { Timestamp } from './common';

export interface RegistryTagSummary {
  name: string;
  path: string;
  location: string;
}

export interface RegistryRepository {
  id: number;
  /** Empty for the root repository. */
  name: string;
  path: string;
  project_id: number;
  /** Registry address of the repository. */
  location: string;
  created_at: Timestamp;
  cleanup_policy_started_at: Timestamp;
  /** Only with `tags_count=true`. */
  tags_count?: number;
  /** Only with `tags=true`. */
  tags?: RegistryTagSummary[];
}

export interface RegistryTag extends RegistryTagSummary {
  revision: string;
  short_revision: string;
  /** `sha256:<hex>`. */
  digest: string;
  /** Manifest creation time; a tag may have none (the forge counts such a tag as the newest). */
  created_at: Timestamp | null;
  total_size: number;
}

export interface ListRegistryRepositoriesParams {
  tags?: boolean;
  tags_count?: boolean;
}

/** Bulk delete parameters (docs/api-client.md, "Container registry"): RE2 regexes, anchored as `\A` + pattern + `\z`. */
export interface BulkDeleteTagsParams {
  name_regex_delete: string;
  /** Deprecated synonym of `name_regex_delete`. */
  name_regex?: string;
  /** Overrides matches of the delete expression; `.*` deletes nothing. */
  name_regex_keep?: string;
  /** Number of latest matching tags to keep. */
  keep_n?: number;
  /** Human-readable interval such as `1h`, `1d`, `1month`: only older tags are deleted. */
  older_than?: string;
}

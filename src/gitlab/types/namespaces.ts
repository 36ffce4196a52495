import type { Timestamp } from './common';

export type NamespaceKind = 'user' | 'group';

/** GitLab's "Namespaces API". */
export interface Namespace {
  id: number;
  name: string;
  path: string;
  full_path: string;
  kind: NamespaceKind;
  parent_id: number | null;
  avatar_url: string | null;
  web_url: string;
  /** Groups only; shown to group maintainers and owners. */
  members_count_with_descendants?: number;
  billable_members_count: number;
  /** Present on the hosted edition; non-zero only on paid plans. */
  max_seats_used?: number;
  seats_in_use?: number;
  plan: string;
  trial_ends_on: Timestamp | null;
  trial: boolean;
}

export interface NamespaceExists {
  exists: boolean;
  /** Path suggestions that do not exist yet. */
  suggests: string[];
}

export interface ListNamespacesParams {
  /** Matches name or path. */
  search?: string;
}

export interface NamespaceExistsParams {
  /** Without it only top-level namespaces are considered. */
  parent_id?: number;
}

import type { Timestamp } from './common';
import type { UserSummary } from './users';

export type ResourceLabelEventType = 'Issue' | 'Epic' | 'MergeRequest';
export const RESOURCE_LABEL_EVENT_ACTIONS = ['add', 'remove'] as const;
export type ResourceLabelEventAction = (typeof RESOURCE_LABEL_EVENT_ACTIONS)[number];

/** GitLab's "Resource label events API". */
export interface ResourceLabelEvent {
  id: number;
  user: UserSummary;
  created_at: Timestamp;
  resource_type: ResourceLabelEventType;
  resource_id: number;
  label: {
    id: number;
    name: string;
    /** Hex, e.g. `#d9534f`. */
    color: string;
    description: string | null;
  };
  action: ResourceLabelEventAction;
}

/** GitLab's "Resource weight events API". */
export interface ResourceWeightEvent {
  id: number;
  user: UserSummary;
  created_at: Timestamp;
  issue_id: number;
  weight: number;
}

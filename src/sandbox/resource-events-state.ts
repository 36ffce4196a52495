import type { ResourceLabelEventAction, ResourceLabelEventType } from '../gitlab/types/resource-events';
import type { SeededNamespaces } from './namespaces-state';
import type { PeopleState } from './people-state';
import type { WorldSeeding } from './seeding';
import type { WorldLabelEvent, WorldProject } from './world';

/**
 * Label and weight history: the labels, the issues, merge requests and epics
 * that carry the events, and the events themselves. All of it is seeded from the world and read only.
 */

export interface LabelRecord {
  id: number;
  name: string;
  color: string;
  description: string | null;
}

/** Issues, merge requests and epics exist only to carry history events. */
export interface IssuableRecord {
  id: number;
  /** `project` for issues and merge requests, `group` for epics. */
  parent_id: number;
  iid: number;
  title: string;
}

export interface LabelEventRecord {
  id: number;
  resource_type: ResourceLabelEventType;
  resource_id: number;
  user_id: number;
  label_id: number;
  action: ResourceLabelEventAction;
  created_at: string;
}

export interface WeightEventRecord {
  id: number;
  issue_id: number;
  user_id: number;
  weight: number;
  created_at: string;
}

export class ResourceEventsState {
  readonly labels = new Map<number, LabelRecord>();
  readonly issues = new Map<number, IssuableRecord>();
  readonly mergeRequests = new Map<number, IssuableRecord>();
  readonly epics = new Map<number, IssuableRecord>();
  readonly labelEvents = new Map<number, LabelEventRecord>();
  readonly weightEvents = new Map<number, WeightEventRecord>();
  /** Labels whose color and description a world event set explicitly. */
  private readonly definedLabels = new Set<number>();

  constructor(private readonly people: PeopleState) {}

  /** An issue or merge request of a project by iid, or an epic of a group by id. */
  issue(projectId: number, iid: number): IssuableRecord | undefined {
    for (const issue of this.issues.values()) if (issue.parent_id === projectId && issue.iid === iid) return issue;
    return undefined;
  }

  mergeRequest(projectId: number, iid: number): IssuableRecord | undefined {
    for (const mr of this.mergeRequests.values()) if (mr.parent_id === projectId && mr.iid === iid) return mr;
    return undefined;
  }

  // ---- seeding ------------------------------------------------------------------------------------------------

  /** Epics of the seeded groups, then issues and merge requests project by project, each with its events. */
  seed(seeded: SeededNamespaces, seeding: WorldSeeding): void {
    this.reserveIds(seeded, seeding);
    for (const { world: g, record: group } of seeded.groups) {
      for (const e of g.epics) {
        const epic: IssuableRecord = {
          id: e.id ?? seeding.ids.next('epic'),
          parent_id: group.id,
          iid: e.iid,
          title: e.title,
        };
        this.epics.set(epic.id, epic);
        this.seedLabelEvents('Epic', epic.id, e.label_events, group.created_at, seeding);
      }
    }
    for (const { world: p, record: project } of seeded.projects) {
      for (const i of p.issues) this.seedIssue(i, project.id, project.created_at, seeding);
      for (const m of p.merge_requests) {
        const mr: IssuableRecord = {
          id: m.id ?? seeding.ids.next('mergeRequest'),
          parent_id: project.id,
          iid: m.iid,
          title: m.title,
        };
        this.mergeRequests.set(mr.id, mr);
        this.seedLabelEvents('MergeRequest', mr.id, m.label_events, project.created_at, seeding);
      }
    }
  }

  private reserveIds(seeded: SeededNamespaces, { ids }: WorldSeeding): void {
    for (const { world: g } of seeded.groups) {
      g.epics.forEach((e) => {
        ids.reserve('epic', e.id);
        e.label_events.forEach((ev) => ids.reserve('labelEvent', ev.id));
      });
    }
    for (const { world: p } of seeded.projects) {
      p.issues.forEach((i) => {
        ids.reserve('issue', i.id);
        i.label_events.forEach((ev) => ids.reserve('labelEvent', ev.id));
        i.weight_events.forEach((ev) => ids.reserve('weightEvent', ev.id));
      });
      p.merge_requests.forEach((m) => {
        ids.reserve('mergeRequest', m.id);
        m.label_events.forEach((ev) => ids.reserve('labelEvent', ev.id));
      });
    }
  }

  private seedIssue(
    i: WorldProject['issues'][number],
    projectId: number,
    fallback: string,
    seeding: WorldSeeding,
  ): void {
    const issue: IssuableRecord = {
      id: i.id ?? seeding.ids.next('issue'),
      parent_id: projectId,
      iid: i.iid,
      title: i.title,
    };
    this.issues.set(issue.id, issue);
    this.seedLabelEvents('Issue', issue.id, i.label_events, fallback, seeding);
    for (const ev of i.weight_events) {
      const user = this.people.userByUsername(ev.user);
      if (!user) continue;
      const event: WeightEventRecord = {
        id: ev.id ?? seeding.ids.next('weightEvent'),
        issue_id: issue.id,
        user_id: user.id,
        weight: ev.weight,
        created_at: ev.created_at ? seeding.time(ev.created_at) : fallback,
      };
      this.weightEvents.set(event.id, event);
    }
  }

  /** Labels are shared by name across the world (ids in order of first mention). */
  private seedLabelEvents(
    type: ResourceLabelEventType,
    resourceId: number,
    events: WorldLabelEvent[],
    fallback: string,
    seeding: WorldSeeding,
  ): void {
    for (const ev of events) {
      const user = this.people.userByUsername(ev.user);
      if (!user) continue;
      const spec = typeof ev.label === 'string' ? { name: ev.label } : ev.label;
      let label = [...this.labels.values()].find((l) => l.name === spec.name);
      if (!label) {
        label = { id: seeding.ids.next('label'), name: spec.name, color: '#6699cc', description: null };
        this.labels.set(label.id, label);
      }
      // The first mention that gives color or description defines them, wherever it is in the file.
      if (typeof ev.label !== 'string' && !this.definedLabels.has(label.id)) {
        this.definedLabels.add(label.id);
        label.color = ev.label.color ?? label.color;
        label.description = ev.label.description ?? label.description;
      }
      const event: LabelEventRecord = {
        id: ev.id ?? seeding.ids.next('labelEvent'),
        resource_type: type,
        resource_id: resourceId,
        user_id: user.id,
        label_id: label.id,
        action: ev.action,
        created_at: ev.created_at ? seeding.time(ev.created_at) : fallback,
      };
      this.labelEvents.set(event.id, event);
    }
  }
}

import type { LabelEventRecord, WeightEventRecord } from '../state';
import { Presenter } from './presenter';

/** Label and weight events, as the forge's Resource label events and Resource weight events APIs show them. */
export class ResourceEventPresenter extends Presenter {
  labelEvent(event: LabelEventRecord): Record<string, unknown> {
    const user = this.state.users.get(event.user_id);
    const label = this.state.labels.get(event.label_id);
    return {
      id: event.id,
      user: user ? this.userSummary(user) : null,
      created_at: event.created_at,
      resource_type: event.resource_type,
      resource_id: event.resource_id,
      label: label ? { id: label.id, name: label.name, color: label.color, description: label.description } : null,
      action: event.action,
    };
  }

  weightEvent(event: WeightEventRecord): Record<string, unknown> {
    const user = this.state.users.get(event.user_id);
    return {
      id: event.id,
      user: user ? this.userSummary(user) : null,
      created_at: event.created_at,
      issue_id: event.issue_id,
      weight: event.weight,
    };
  }
}

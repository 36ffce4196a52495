import type { VariableType } from '../gitlab/types/variables';
import type { SourceKind } from './people-state';

/** CI/CD variables of projects and groups (GitLab's "Project-level" and "Group-level CI/CD variables API"). */

export interface CiVariableRecord {
  id: number;
  source: SourceKind;
  source_id: number;
  key: string;
  value: string;
  variable_type: VariableType;
  protected: boolean;
  masked: boolean;
  /** Masked and hidden: the API answers `value: null` from then on. */
  hidden: boolean;
  raw: boolean;
  environment_scope: string;
  description: string | null;
}

export class CiVariablesState {
  readonly variables = new Map<number, CiVariableRecord>();
  private lastId = 0;

  nextId(): number {
    return ++this.lastId;
  }

  add(record: CiVariableRecord): CiVariableRecord {
    this.variables.set(record.id, record);
    this.lastId = Math.max(this.lastId, record.id);
    return record;
  }

  /** A project's or group's variables, oldest first. */
  of(source: SourceKind, sourceId: number): CiVariableRecord[] {
    return [...this.variables.values()]
      .filter((v) => v.source === source && v.source_id === sourceId)
      .sort((a, b) => a.id - b.id);
  }

  /** Those with `key`, in `environmentScope` when given (the forge's `Ci::VariablesFinder`). */
  matching(
    source: SourceKind,
    sourceId: number,
    key: string,
    environmentScope: string | undefined,
  ): CiVariableRecord[] {
    return this.of(source, sourceId).filter(
      (v) => v.key === key && (environmentScope === undefined || v.environment_scope === environmentScope),
    );
  }

  /** The variables of a deleted project or group. */
  forget(source: SourceKind, sourceId: number): void {
    for (const variable of this.of(source, sourceId)) this.variables.delete(variable.id);
  }
}

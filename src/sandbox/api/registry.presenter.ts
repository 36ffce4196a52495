import { createHash } from 'node:crypto';
import type { RepositoryRecord, TagRecord } from '../state';
import { Presenter } from './presenter';

/** Container registry repositories and their tags, as the forge's Container registry API shows them. */
export class RegistryPresenter extends Presenter {
  repository(
    repository: RepositoryRecord,
    options: { tags?: boolean; tagsCount?: boolean } = {},
  ): Record<string, unknown> {
    const path = this.state.repositoryPath(repository);
    return {
      id: repository.id,
      name: repository.name,
      path,
      project_id: repository.project_id,
      location: `${this.state.registryHost}/${path}`,
      created_at: repository.created_at,
      cleanup_policy_started_at: null,
      status: repository.status,
      ...(options.tagsCount ? { tags_count: repository.tags.size } : {}),
      ...(options.tags ? { tags: this.state.tags(repository.id).map((t) => this.tag(repository, t)) } : {}),
    };
  }

  tag(repository: RepositoryRecord, tag: TagRecord): Record<string, unknown> {
    const path = `${this.state.repositoryPath(repository)}:${tag.name}`;
    return { name: tag.name, path, location: `${this.state.registryHost}/${path}` };
  }

  tagDetail(repository: RepositoryRecord, tag: TagRecord): Record<string, unknown> {
    const revision = createHash('sha256').update(tag.digest).digest('hex');
    return {
      ...this.tag(repository, tag),
      revision,
      short_revision: revision.slice(0, 9),
      digest: tag.digest,
      created_at: tag.created_at,
      total_size: tag.total_size,
    };
  }
}

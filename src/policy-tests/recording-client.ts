import type { GitlabClient } from '../gitlab/client';

/**
 * The forge's client as `forgewarden record` hands it to a policy's observe: every answer of the reads observe makes
 * is kept (so the world written holds exactly what observe read), and anything else, a write above all, is refused
 * before it is sent. The reads below are every one the policy types' observers make; a type that reads something
 * new fails to record with a message naming it, rather than recording a world that lacks it.
 */

/** One answer: of a call that returns a value, or one item of a listing. */
export interface Answer {
  readonly resource: string;
  readonly method: string;
  readonly args: readonly unknown[];
  readonly value: unknown;
}

/** The client's reads that observers make, by resource; the recorded world knows how to hold each one's answer. */
export const RECORDED_READS: Readonly<Record<string, readonly string[]>> = {
  projects: ['show', 'allForGroup'],
  groups: ['show', 'subgroups', 'descendantGroups'],
  jobs: ['all', 'allForPipeline', 'show', 'traceTail'],
  registry: ['all', 'allForGroup', 'allTags', 'showTag'],
  users: ['current', 'show', 'all'],
  sshKeys: ['all', 'allForUser'],
  deployKeys: ['all'],
  groupAccessRequests: ['all'],
  projectAccessRequests: ['all'],
  protectedBranches: ['all'],
  projectApprovalSettings: ['show'],
  projectApprovalRules: ['all'],
  integrations: ['all', 'show'],
};

export class UnrecordedReadError extends Error {
  constructor(resource: string, method: string) {
    super(
      `forgewarden record keeps only the reads a policy observes with; client.${resource}.${method} is not one of them, so it is not sent`,
    );
    this.name = 'UnrecordedReadError';
  }
}

/** `client` with each read of RECORDED_READS kept in `answers` as it is answered, and every other call refused. */
export function recordingClient(client: GitlabClient, answers: Answer[]): GitlabClient {
  const resources = new Map<PropertyKey, unknown>();
  return new Proxy(client, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof property !== 'string' || typeof value !== 'object' || value === null) return value;
      let wrapped = resources.get(property);
      if (!wrapped) {
        wrapped = recordingResource(property, value, answers);
        resources.set(property, wrapped);
      }
      return wrapped;
    },
  });
}

function recordingResource(resource: string, target: object, answers: Answer[]): object {
  const allowed = new Set(RECORDED_READS[resource] ?? []);
  return new Proxy(target, {
    get(object, method, receiver) {
      const value: unknown = Reflect.get(object, method, receiver);
      if (typeof method !== 'string' || typeof value !== 'function') return value;
      if (!allowed.has(method)) {
        return () => {
          throw new UnrecordedReadError(resource, method);
        };
      }
      return (...args: unknown[]) => {
        const result: unknown = Reflect.apply(value as (...args: unknown[]) => unknown, object, args);
        if (isAsyncIterable(result))
          return keepItems(result, (item) => answers.push({ resource, method, args, value: item }));
        return Promise.resolve(result).then((answer) => {
          answers.push({ resource, method, args, value: answer });
          return answer;
        });
      };
    },
  });
}

function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return typeof value === 'object' && value !== null && Symbol.asyncIterator in value;
}

async function* keepItems(items: AsyncIterable<unknown>, keep: (item: unknown) => void): AsyncGenerator<unknown> {
  for await (const item of items) {
    keep(item);
    yield item;
  }
}

import { VISIBILITIES, type Visibility } from '../../gitlab/types/common';
import {
  ApiError,
  forbidden,
  intParam,
  notFound,
  ok,
  paramError,
  requiredParam,
  type RequestContext,
} from '../http/context';
import { UploadedFile } from '../http/multipart';
import type { Router } from '../http/router';
import {
  type ArchivedGroup,
  exportArchive,
  exportDelayMs,
  GROUP_RELATIONS,
  groupTransferOf,
  readArchive,
  type RelationExportRecord,
  relationFile,
} from '../group-transfer-state';
import { rateLimited } from '../export-limits';
import type { GroupRecord } from '../state';
import { currentUser, findGroup, GUEST, MAINTAINER, OWNER } from './access';

const ACCEPTED = { message: '202 Accepted' };

/**
 * Group export, import and relations export; owners export, maintainers of the parent import. Export,
 * download and import are rate limited like the forge's (`export_rate_limits`): the forge checks the limit after
 * authorizing and before anything else, so a 404 download counts and a 429 changes nothing.
 */
export function registerGroupTransferRoutes(router: Router): void {
  router
    .post('/groups/import', (ctx) => importGroup(ctx))
    .post('/groups/:id/export', (ctx) => {
      const group = findGroup(ctx, OWNER);
      const limited = rateLimited(ctx, 'groupExport', String(currentUser(ctx).id));
      if (limited) return limited;
      const { state } = ctx;
      const transfer = groupTransferOf(state);
      // The forge's export service removes the finished export before making a new one: until that one is done,
      // a download finds nothing. Only the latest request stores its archive.
      transfer.exports.delete(group.id);
      const request = Symbol('export');
      transfer.pendingExports.set(group.id, request);
      state.schedule(exportDelayMs(state), () => {
        if (transfer.pendingExports.get(group.id) !== request) return;
        transfer.pendingExports.delete(group.id);
        if (!state.groups.has(group.id)) return;
        const data = exportArchive(state, group, state.settings.exportPaddingBytes);
        transfer.exports.set(group.id, { data, madeAt: state.clock.now() });
      });
      return ok(ACCEPTED, 202);
    })
    .get('/groups/:id/export/download', (ctx) => {
      const group = findGroup(ctx, OWNER);
      const limited = rateLimited(ctx, 'groupDownloadExport', `${currentUser(ctx).id}:${group.id}`);
      if (limited) return limited;
      const archive = groupTransferOf(ctx.state).archive(group.id, ctx.state.clock.now());
      if (!archive) throw new ApiError(404, { message: '404 Not found or has expired' });
      const stamp = ctx.state.nowIso().replace(/[-:]/g, '').replace(/\..*$/, '');
      const name = `${stamp}_${ctx.state.groupFullPath(group).replace(/\//g, '_')}_export.tar.gz`;
      return {
        status: 200,
        binary: archive.data,
        headers: {
          'Content-Type': 'application/octet-stream',
          'Content-Disposition': `attachment; filename="${name}"`,
        },
      };
    })
    .post('/groups/:id/export_relations', (ctx) => {
      const group = findGroup(ctx, OWNER);
      const { state } = ctx;
      const transfer = groupTransferOf(state);
      const relations = new Map<string, RelationExportRecord>(
        GROUP_RELATIONS.map((relation) => [
          relation,
          { relation, status: 0, error: null, updated_at: state.nowIso(), data: null },
        ]),
      );
      transfer.relationExports.set(group.id, relations);
      state.schedule(exportDelayMs(state), () => {
        for (const record of relations.values()) {
          record.updated_at = state.nowIso();
          if (transfer.failingRelations.has(record.relation)) {
            record.status = -1;
            record.error = `Failed to export ${record.relation}`;
          } else {
            record.status = 1;
            record.data = relationFile(state, group, record.relation);
          }
        }
      });
      return ok(ACCEPTED, 202);
    })
    .get('/groups/:id/export_relations/status', (ctx) => {
      const group = findGroup(ctx, OWNER);
      const relations = groupTransferOf(ctx.state).relationExports.get(group.id);
      return ok(
        [...(relations?.values() ?? [])].map(({ relation, status, error, updated_at }) => ({
          relation,
          status,
          error,
          updated_at,
        })),
      );
    })
    .get('/groups/:id/export_relations/download', (ctx) => {
      const group = findGroup(ctx, OWNER);
      const relation = requiredParam(ctx, 'relation');
      const record = groupTransferOf(ctx.state).relationExports.get(group.id)?.get(relation);
      if (!record?.data) throw notFound();
      return {
        status: 200,
        binary: record.data,
        headers: {
          'Content-Type': 'application/gzip',
          'Content-Disposition': `attachment; filename="${relation}.ndjson.gz"`,
        },
      };
    });
}

/** Least visible first. */
const VISIBILITY_ORDER: readonly Visibility[] = VISIBILITIES;

function importGroup(ctx: RequestContext) {
  const user = currentUser(ctx);
  const name = requiredParam(ctx, 'name');
  const path = requiredParam(ctx, 'path');
  const file = ctx.body.file;
  if (file === undefined) throw paramError('file is missing');
  if (!(file instanceof UploadedFile)) throw paramError('file is invalid');
  const parentId = intParam(ctx, 'parent_id');
  // After Grape's parameter checks, before anything else (the forge's `check_import_rate_limit!`).
  const limited = rateLimited(ctx, 'groupImport', String(user.id));
  if (limited) return limited;
  const { state } = ctx;

  let parent: GroupRecord | undefined;
  if (parentId !== undefined) {
    parent = findGroup({ ...ctx, params: { id: String(parentId) } }, MAINTAINER);
  } else if (!user.is_admin && !user.can_create_group) {
    throw forbidden();
  }
  const archive = readArchive(file.data);
  if (!archive) throw paramError('file is invalid');
  if (!/^[a-zA-Z0-9_.][a-zA-Z0-9_.-]*$/.test(path) || /\.(git|atom)$/.test(path)) {
    throw new ApiError(400, {
      message: "Group could not be imported: Path can contain only letters, digits, '_', '-' and '.'",
    });
  }
  if (pathTaken(ctx, parent?.id ?? null, path)) {
    throw new ApiError(400, { message: 'Group could not be imported: Path has already been taken' });
  }

  // Private at the top level; inside a parent, the parent's visibility at most.
  const visibility: Visibility = parent
    ? VISIBILITY_ORDER[
        Math.min(
          VISIBILITY_ORDER.indexOf(archive.visibility) >= 0 ? VISIBILITY_ORDER.indexOf(archive.visibility) : 0,
          VISIBILITY_ORDER.indexOf(parent.visibility),
        )
      ]
    : 'private';
  const group = createGroup(ctx, { name, path, description: '', visibility }, parent?.id ?? null);
  if (!parent)
    state.members.push({
      source: 'group',
      source_id: group.id,
      user_id: user.id,
      access_level: OWNER,
      created_at: state.nowIso(),
    });

  // The contents arrive asynchronously, as the forge's import worker fills the group it created.
  state.schedule(exportDelayMs(state), () => {
    if (!state.groups.has(group.id)) return;
    group.description = archive.description ?? '';
    addMembers(ctx, group, archive, user.id);
    addSubgroups(ctx, group, archive.subgroups ?? []);
  });
  return ok(ACCEPTED, 202);
}

function pathTaken(ctx: RequestContext, parentId: number | null, path: string): boolean {
  const lower = path.toLowerCase();
  const groups = [...ctx.state.groups.values()].some((g) => g.parent_id === parentId && g.path.toLowerCase() === lower);
  const users = parentId === null && [...ctx.state.users.values()].some((u) => u.username.toLowerCase() === lower);
  return groups || users;
}

function createGroup(
  ctx: RequestContext,
  fields: Pick<GroupRecord, 'name' | 'path' | 'description' | 'visibility'>,
  parentId: number | null,
): GroupRecord {
  const group: GroupRecord = {
    id: ctx.state.nextId('namespace'),
    ...fields,
    parent_id: parentId,
    request_access_enabled: true,
    created_at: ctx.state.nowIso(),
  };
  ctx.state.groups.set(group.id, group);
  return group;
}

/** Members keep their membership only if their user exists already (matched by username). */
function addMembers(ctx: RequestContext, group: GroupRecord, archived: ArchivedGroup, skipUserId: number): void {
  const members = (archived as { members?: { username?: string; access_level?: number }[] }).members ?? [];
  for (const member of members) {
    const user = member.username ? ctx.state.userByUsername(member.username) : undefined;
    if (!user || user.id === skipUserId || ctx.state.member('group', group.id, user.id)) continue;
    const level = typeof member.access_level === 'number' ? member.access_level : GUEST;
    ctx.state.members.push({
      source: 'group',
      source_id: group.id,
      user_id: user.id,
      access_level: level,
      created_at: ctx.state.nowIso(),
    });
  }
}

function addSubgroups(ctx: RequestContext, parent: GroupRecord, subgroups: ArchivedGroup[]): void {
  for (const archived of subgroups) {
    if (typeof archived.path !== 'string' || pathTaken(ctx, parent.id, archived.path)) continue;
    const ownIndex = Math.max(0, VISIBILITY_ORDER.indexOf(archived.visibility));
    const visibility = VISIBILITY_ORDER[Math.min(ownIndex, VISIBILITY_ORDER.indexOf(parent.visibility))];
    const group = createGroup(
      ctx,
      {
        name: String(archived.name ?? archived.path),
        path: archived.path,
        description: archived.description ?? '',
        visibility,
      },
      parent.id,
    );
    addMembers(ctx, group, archived, -1);
    addSubgroups(ctx, group, archived.subgroups ?? []);
  }
}

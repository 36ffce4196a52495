import { gzipSync } from 'node:zlib';
import type { RelationExportStatus } from '../gitlab/types/group-transfer';
import { ARCHIVE_VERSION, gunzipTar, gzipTar, padding, type TarEntry } from './archive';
import type { GroupRecord, SandboxState } from './state';

/**
 * Group export archives and relations exports (GitLab's "Group and project import and export API"). Archives
 * are real gzip-compressed tar files the sandbox writes itself: `VERSION` and `tree/group.json` (the group and its
 * subgroups, recursively, with members), plus `tree/padding.bin` when `export_padding_bytes` asks for a large
 * archive; relation files are gzip-compressed NDJSON. Work completes after `exportDelayMs(state)`, like the
 * sandbox's other background jobs (`state.whenIdle()`). The endpoints' rate limits are counted in
 * `export-limits.ts`.
 */

/** How long a finished export archive can be downloaded: the forge removes it after 24 hours. */
export const EXPORT_TTL_MS = 24 * 60 * 60 * 1000;

/** Top-level relations a relations export writes, one file each. */
export const GROUP_RELATIONS = ['self', 'labels', 'milestones', 'badges', 'boards', 'members'] as const;

/** A relation's status entry as the forge answers it, with the relation file once it is written. */
export interface RelationExportRecord extends RelationExportStatus {
  data: Buffer | null;
}

/** The part of an archive's `tree/group.json` the sandbox reads back on import. */
export interface ArchivedGroup {
  name: string;
  path: string;
  description: string;
  visibility: GroupRecord['visibility'];
  subgroups: ArchivedGroup[];
}

export interface ExportedArchive {
  data: Buffer;
  /** Sandbox clock (ms) when the export finished; the archive expires EXPORT_TTL_MS later. */
  madeAt: number;
}

export class GroupTransferState {
  /** Group id → its finished export archive. */
  readonly exports = new Map<number, ExportedArchive>();
  /** Group id → the export last requested and not yet finished; only that one may store its archive. */
  readonly pendingExports = new Map<number, symbol>();
  /** Group id → the status of each relation of its last relations export. */
  readonly relationExports = new Map<number, Map<string, RelationExportRecord>>();
  /** Relations whose export fails (tests set this to see status -1). */
  readonly failingRelations = new Set<string>();
  /** The finished archive of a group, unless it has expired (then it is gone, as on the forge). */
  archive(groupId: number, now: number): ExportedArchive | undefined {
    const archive = this.exports.get(groupId);
    if (archive && now - archive.madeAt >= EXPORT_TTL_MS) {
      this.exports.delete(groupId);
      return undefined;
    }
    return archive;
  }
}

const states = new WeakMap<SandboxState, GroupTransferState>();

/** Delay of export, import and relations export work: `export_delay_ms`, else the bulk deletions' delay. */
export function exportDelayMs(state: SandboxState): number {
  return state.settings.exportDelayMs ?? state.settings.bulkDeleteDelayMs;
}

export function groupTransferOf(state: SandboxState): GroupTransferState {
  let transfer = states.get(state);
  if (!transfer) states.set(state, (transfer = new GroupTransferState()));
  return transfer;
}

export function archivedGroup(state: SandboxState, group: GroupRecord): ArchivedGroup & Record<string, unknown> {
  const children = [...state.groups.values()].filter((g) => g.parent_id === group.id).sort((a, b) => a.id - b.id);
  return {
    name: group.name,
    path: group.path,
    description: group.description,
    visibility: group.visibility,
    members: membersOf(state, group),
    subgroups: children.map((child) => archivedGroup(state, child)),
  };
}

/** By user id, so an archive does not depend on the order memberships were made in (an import adds its caller first). */
function membersOf(state: SandboxState, group: GroupRecord): Record<string, unknown>[] {
  return state.members
    .filter((m) => m.source === 'group' && m.source_id === group.id)
    .sort((a, b) => a.user_id - b.user_id)
    .map((m) => ({ user_id: m.user_id, username: state.users.get(m.user_id)?.username, access_level: m.access_level }));
}

/**
 * The archive of a group export: `VERSION`, `tree/group.json` and, with `paddingBytes`, `tree/padding.bin`, as a
 * gzip-compressed tar. The padding is pseudo-random so gzip cannot shrink it: the archive really is that large.
 */
export function exportArchive(state: SandboxState, group: GroupRecord, paddingBytes = 0): Buffer {
  const entries: TarEntry[] = [
    { name: 'VERSION', data: Buffer.from(`${ARCHIVE_VERSION}\n`) },
    { name: 'tree/group.json', data: Buffer.from(JSON.stringify(archivedGroup(state, group))) },
  ];
  if (paddingBytes > 0) entries.push({ name: 'tree/padding.bin', data: padding(paddingBytes, 'group', group.id) });
  return gzipTar(entries);
}

/**
 * Reads `tree/group.json` back from an archive, ignoring every other entry (padding, a real forge's project trees);
 * undefined when the bytes are not such an archive. Names may start with `./`, as in archives `tar -C dir .` wrote.
 */
export function readArchive(archive: Buffer): ArchivedGroup | undefined {
  try {
    const entry = gunzipTar(archive).find((e) => e.name.replace(/^\.\//, '') === 'tree/group.json');
    if (!entry) return undefined;
    const group = JSON.parse(entry.data.toString('utf8')) as ArchivedGroup;
    return typeof group === 'object' && group !== null && Array.isArray(group.subgroups) ? group : undefined;
  } catch {
    return undefined;
  }
}

/** One relation's file: gzip-compressed NDJSON, one record a line. */
export function relationFile(state: SandboxState, group: GroupRecord, relation: string): Buffer {
  let records: unknown[] = [];
  if (relation === 'self') {
    records = [{ name: group.name, path: group.path, description: group.description, visibility: group.visibility }];
  } else if (relation === 'members') {
    records = membersOf(state, group);
  }
  return gzipSync(records.map((r) => `${JSON.stringify(r)}\n`).join(''));
}

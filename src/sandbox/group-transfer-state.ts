import { gunzipSync, gzipSync } from 'node:zlib';
import type { GroupRecord, SandboxState } from './state';

/**
 * Group export archives and relations exports (spec 01 §4 "Group export, import and relations export"). Archives
 * are real gzip-compressed tar files the sandbox writes itself: `VERSION` and `tree/group.json` (the group and its
 * subgroups, recursively, with members); relation files are gzip-compressed NDJSON. Work completes after
 * `state.settings.bulkDeleteDelayMs`, like the sandbox's other background jobs (`state.whenIdle()`).
 */

/** Top-level relations a relations export writes, one file each. */
export const GROUP_RELATIONS = ['self', 'labels', 'milestones', 'badges', 'boards', 'members'] as const;

export interface RelationExportRecord {
  relation: string;
  /** Spec 01 §3: 0 started, 1 finished, -1 failed. */
  status: 0 | 1 | -1;
  error: string | null;
  updated_at: string;
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

export class GroupTransferState {
  /** Group id → its finished export archive. */
  readonly exports = new Map<number, Buffer>();
  /** Group id → the status of each relation of its last relations export. */
  readonly relationExports = new Map<number, Map<string, RelationExportRecord>>();
  /** Relations whose export fails (tests set this to see status -1). */
  readonly failingRelations = new Set<string>();
}

const states = new WeakMap<SandboxState, GroupTransferState>();

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

function membersOf(state: SandboxState, group: GroupRecord): Record<string, unknown>[] {
  return state.members
    .filter((m) => m.source === 'group' && m.source_id === group.id)
    .map((m) => ({ user_id: m.user_id, username: state.users.get(m.user_id)?.username, access_level: m.access_level }));
}

/** The archive of a group export: `VERSION` and `tree/group.json`, as a gzip-compressed tar. */
export function exportArchive(state: SandboxState, group: GroupRecord): Buffer {
  return gzipSync(
    tar([
      { name: 'VERSION', data: Buffer.from('0.2.4\n') },
      { name: 'tree/group.json', data: Buffer.from(JSON.stringify(archivedGroup(state, group))) },
    ]),
  );
}

/** Reads `tree/group.json` back from an archive; undefined when the bytes are not such an archive. */
export function readArchive(archive: Buffer): ArchivedGroup | undefined {
  try {
    const entry = untar(gunzipSync(archive)).find((e) => e.name === 'tree/group.json');
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

// ---- a minimal ustar writer and reader -----------------------------------------------------------------------

interface TarEntry {
  name: string;
  data: Buffer;
}

function tar(entries: TarEntry[]): Buffer {
  const blocks: Buffer[] = [];
  for (const entry of entries) {
    const header = Buffer.alloc(512);
    header.write(entry.name, 0, 100, 'utf8');
    header.write('0000644\0', 100);
    header.write('0000000\0', 108);
    header.write('0000000\0', 116);
    header.write(`${entry.data.length.toString(8).padStart(11, '0')}\0`, 124);
    header.write('00000000000\0', 136);
    header.write('        ', 148); // checksum field counts as spaces while summing
    header.write('0', 156);
    header.write('ustar\0', 257);
    header.write('00', 263);
    let sum = 0;
    for (const byte of header) sum += byte;
    header.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148);
    blocks.push(header, entry.data, Buffer.alloc((512 - (entry.data.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}

function untar(archive: Buffer): TarEntry[] {
  const entries: TarEntry[] = [];
  for (let offset = 0; offset + 512 <= archive.length; ) {
    const header = archive.subarray(offset, offset + 512);
    if (header.every((byte) => byte === 0)) break;
    const name = header.subarray(0, 100).toString('utf8').replace(/\0.*$/s, '');
    const size = parseInt(header.subarray(124, 136).toString('ascii').replace(/\0.*$/s, '').trim() || '0', 8);
    if (!Number.isFinite(size) || offset + 512 + size > archive.length) throw new Error('tar: truncated');
    entries.push({ name, data: archive.subarray(offset + 512, offset + 512 + size) });
    offset += 512 + Math.ceil(size / 512) * 512;
  }
  return entries;
}

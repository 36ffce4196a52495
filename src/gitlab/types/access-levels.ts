/**
 * The roles of a member of a group or project, by name and number (GitLab's "Group and project members API": `0` no
 * access, `5` minimal access, `10` guest, `20` reporter, `30` developer, `40` maintainer, `50` owner, valid for groups
 * only). The one table of them: the client's types, the policy files (which take a name or the number) and the sandbox
 * all read it.
 */
export const ACCESS_LEVELS = {
  no_access: 0,
  minimal_access: 5,
  guest: 10,
  reporter: 20,
  developer: 30,
  maintainer: 40,
  owner: 50,
} as const;
export type AccessLevelName = keyof typeof ACCESS_LEVELS;
export type AccessLevel = (typeof ACCESS_LEVELS)[AccessLevelName];
export type ProjectAccessLevel = Exclude<AccessLevel, 50>;

/** Every name of ACCESS_LEVELS, in its order (lowest level first). */
export const ACCESS_LEVEL_NAMES: readonly [AccessLevelName, ...AccessLevelName[]] = Object.keys(ACCESS_LEVELS) as [
  AccessLevelName,
  ...AccessLevelName[],
];
/** Every number of ACCESS_LEVELS, lowest first. */
export const ACCESS_LEVEL_VALUES: readonly [AccessLevel, ...AccessLevel[]] = Object.values(ACCESS_LEVELS) as [
  AccessLevel,
  ...AccessLevel[],
];

const ACCESS_LEVEL_NAME_OF = new Map<number, AccessLevelName>(
  ACCESS_LEVEL_NAMES.map((name) => [ACCESS_LEVELS[name], name]),
);

/** The name of an access level (`30` → `developer`); undefined for a number that is none. */
export function accessLevelName(level: number): AccessLevelName | undefined {
  return ACCESS_LEVEL_NAME_OF.get(level);
}

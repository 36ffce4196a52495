/** The world file the sandbox serves: its parts, their cross-references, generated groups and projects, loading. */
export { resolveTimestamp } from './fields';
export { type WorldGenerate } from './generate';
export {
  loadWorld,
  parseWorld,
  parseWorldYaml,
  worldSchema,
  WorldError,
  type ParsedWorld,
  type World,
  type WorldProblem,
} from './load';
export {
  exportPaddingBytes,
  exportRateLimitsSchema,
  isHookUrl,
  type WorldDeployKey,
  type WorldExportRateLimits,
  type WorldGroup,
  type WorldHook,
  type WorldJob,
  type WorldLabelEvent,
  type WorldPipeline,
  type WorldProject,
  type WorldProtectedBranch,
  type WorldRepository,
  type WorldUser,
  type WorldWeightEvent,
} from './schema';

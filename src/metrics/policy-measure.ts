/**
 * A figure a policy type publishes besides the engine's own counts, declared by its runner (`measures`) and exported as
 * `forgewarden_<name>{policy, ...labels}`: the bytes a policy wrote, when a target last succeeded.
 */
export interface PolicyMeasure {
  /** Without the `forgewarden_` prefix, in Prometheus' style (`..._timestamp_seconds`, `..._total`). */
  readonly name: string;
  readonly help: string;
  /** A gauge is set to a value (a time); a counter is added to (an amount). */
  readonly kind: 'gauge' | 'counter';
  /** Labels besides `policy`. */
  readonly labels: readonly string[];
  /** A gauge kept in Redis and exported by every replica alike (a last success), so alerts see one truth. */
  readonly clusterWide?: boolean;
  /**
   * For a cluster-wide gauge that flags a condition (1 while it holds): what the console's overview says on the
   * policy's row while it is not 0, in words for the labels (`the backup set of acme runs past the next one`).
   */
  readonly notice?: (labels: Readonly<Record<string, string>>) => string;
}

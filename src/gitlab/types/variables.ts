/**
 * CI/CD variables of projects and groups, as GitLab's public API docs describe them ("Project-level CI/CD variables
 * API", "Group-level CI/CD variables API"); beyond the forge's API specification.
 */

export const VARIABLE_TYPES = ['env_var', 'file'] as const;
export type VariableType = (typeof VARIABLE_TYPES)[number];

export interface CiVariable {
  key: string;
  /** Null for a hidden variable (masked and hidden): the forge never shows its value again. */
  value: string | null;
  variable_type: VariableType;
  protected: boolean;
  masked: boolean;
  /** Since GitLab 17.4; set only when made with `masked_and_hidden`. */
  hidden?: boolean;
  /** True: `$NAME` in the value is not expanded. */
  raw: boolean;
  /** `*` for every environment. Group variables have one on Premium and Ultimate only. */
  environment_scope: string;
  description: string | null;
}

/**
 * A masked value must be one line of at least 8 characters without spaces; unless `raw`, only letters, digits and
 * `_+=/@:.~-` (the forge's `Ci::Maskable`). Anything else is refused with 400 `{"message":{"value":["is invalid"]}}`.
 */
export interface CreateCiVariableParams {
  /** Letters, digits and `_`, at most 255. */
  key: string;
  value: string;
  variable_type?: VariableType;
  protected?: boolean;
  masked?: boolean;
  /** Masked, and never shown again by the forge (GitLab 17.4 and later); only when creating. */
  masked_and_hidden?: boolean;
  raw?: boolean;
  environment_scope?: string;
  description?: string;
}

export type EditCiVariableParams = Partial<Omit<CreateCiVariableParams, 'key' | 'masked_and_hidden'>>;

/**
 * Which of the variables sharing a key: `filter[environment_scope]`. Without it, a key that several environment
 * scopes share answers 409 (`There are multiple variables with provided parameters. Please use
 * 'filter[environment_scope]'`).
 */
export interface CiVariableFilter {
  environment_scope?: string;
}

import { VARIABLE_TYPES } from '../../gitlab/types/variables';
import type { BotPlace } from '../access-tokens-state';
import type { CiVariableRecord } from '../ci-variables-state';
import { maskProblem } from '../masked-values';
import {
  ApiError,
  boolParam,
  enumParam,
  noContent,
  notFound,
  ok,
  param,
  requiredParam,
  validationError,
  type RequestContext,
} from '../http/context';
import { paginate } from '../http/pagination';
import type { Router } from '../http/router';
import type { SourceKind } from '../state';
import { findGroup, findProject, MAINTAINER, OWNER } from './access';

/**
 * GitLab's "Project-level" and "Group-level CI/CD variables API": maintainers manage a project's variables, owners a
 * group's. A key may repeat across environment scopes; `filter[environment_scope]` picks one, and without it a key
 * several scopes share answers 409. Masked values follow the forge's `Ci::Maskable` (400 `value is invalid`).
 */
export function registerVariableRoutes(router: Router): void {
  for (const source of ['project', 'group'] as const) {
    const base = `/${source}s/:id/variables`;
    router
      .get(base, (ctx) => paginate(ctx, ctx.state.ciVariables.of(source, place(ctx, source).source_id), variableView))
      .get(`${base}/:key`, (ctx) => ok(variableView(findVariable(ctx, place(ctx, source)))))
      .post(base, (ctx) => ok(variableView(createVariable(ctx, place(ctx, source))), 201))
      .put(`${base}/:key`, (ctx) => ok(variableView(updateVariable(ctx, findVariable(ctx, place(ctx, source))))))
      .delete(`${base}/:key`, (ctx) => {
        ctx.state.ciVariables.variables.delete(findVariable(ctx, place(ctx, source)).id);
        return noContent();
      });
  }
}

function place(ctx: RequestContext, source: SourceKind): BotPlace {
  return { source, source_id: source === 'project' ? findProject(ctx, MAINTAINER).id : findGroup(ctx, OWNER).id };
}

/** The forge's `Ci::Variable` entity: a hidden variable's value is never shown again. */
function variableView(variable: CiVariableRecord): Record<string, unknown> {
  return {
    variable_type: variable.variable_type,
    key: variable.key,
    value: variable.hidden ? null : variable.value,
    hidden: variable.hidden,
    protected: variable.protected,
    masked: variable.masked,
    raw: variable.raw,
    environment_scope: variable.environment_scope,
    description: variable.description,
  };
}

/** `filter[environment_scope]`, from the query or a JSON body's `filter` object. */
function scopeFilter(ctx: RequestContext): string | undefined {
  const fromQuery = ctx.query.get('filter[environment_scope]');
  if (fromQuery !== null) return fromQuery;
  const filter = ctx.body.filter;
  const fromBody =
    typeof filter === 'object' && filter !== null
      ? (filter as Record<string, unknown>).environment_scope
      : ctx.body['filter[environment_scope]'];
  return typeof fromBody === 'string' ? fromBody : undefined;
}

function findVariable(ctx: RequestContext, where: BotPlace): CiVariableRecord {
  const found = ctx.state.ciVariables.matching(where.source, where.source_id, ctx.params.key ?? '', scopeFilter(ctx));
  if (found.length > 1) {
    throw new ApiError(409, {
      message: "There are multiple variables with provided parameters. Please use 'filter[environment_scope]'",
    });
  }
  if (found.length === 0) throw notFound('Variable');
  return found[0];
}

function createVariable(ctx: RequestContext, where: BotPlace): CiVariableRecord {
  const key = requiredParam(ctx, 'key');
  const value = param(ctx, 'value');
  if (value === undefined) throw new ApiError(400, { error: 'value is missing' });
  const hidden = boolParam(ctx, 'masked_and_hidden') ?? false;
  const variable: CiVariableRecord = {
    id: ctx.state.ciVariables.nextId(),
    ...where,
    key,
    value,
    variable_type: enumParam(ctx, 'variable_type', VARIABLE_TYPES) ?? 'env_var',
    protected: boolParam(ctx, 'protected') ?? false,
    masked: hidden || (boolParam(ctx, 'masked') ?? false),
    hidden,
    raw: boolParam(ctx, 'raw') ?? false,
    environment_scope: param(ctx, 'environment_scope') || '*',
    description: param(ctx, 'description') ?? null,
  };
  validate(ctx, variable, undefined);
  return ctx.state.ciVariables.add(variable);
}

/** Every parameter given replaces the old value; the key and `filter` pick the variable and stay. */
function updateVariable(ctx: RequestContext, variable: CiVariableRecord): CiVariableRecord {
  const masked = boolParam(ctx, 'masked');
  const updated: CiVariableRecord = {
    ...variable,
    value: param(ctx, 'value') ?? variable.value,
    variable_type: enumParam(ctx, 'variable_type', VARIABLE_TYPES) ?? variable.variable_type,
    protected: boolParam(ctx, 'protected') ?? variable.protected,
    masked: masked ?? variable.masked,
    raw: boolParam(ctx, 'raw') ?? variable.raw,
    environment_scope: param(ctx, 'environment_scope') ?? variable.environment_scope,
    description: param(ctx, 'description') ?? variable.description,
  };
  if (variable.hidden && masked === false)
    throw validationError({ masked: ['Only visible variables can be set to unmasked'] });
  validate(ctx, updated, variable.id);
  ctx.state.ciVariables.variables.set(variable.id, updated);
  return updated;
}

/** The model's validations, answered as the forge answers them (`render_validation_error!`). */
function validate(ctx: RequestContext, variable: CiVariableRecord, self: number | undefined): void {
  if (!/^[A-Za-z0-9_]{1,255}$/.test(variable.key)) {
    throw validationError({ key: ["can contain only letters, digits and '_'."] });
  }
  const taken = ctx.state.ciVariables
    .matching(variable.source, variable.source_id, variable.key, variable.environment_scope)
    .some((other) => other.id !== self);
  if (taken) throw validationError({ key: [`(${variable.key}) has already been taken`] });
  if (variable.masked && maskProblem(variable.value, variable.raw) !== undefined)
    throw validationError({ value: ['is invalid'] });
}

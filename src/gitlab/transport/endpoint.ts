/**
 * The one place where path parameters are encoded (as gitbeaker does it). Resources can only hand the
 * transport an `Endpoint`, which only this tagged template makes, so a raw, unencoded path cannot reach the wire.
 */

/** A project or group `:id`: the integer ID or the full path (GitLab's REST API conventions, "Namespaced paths"). */
export type ProjectId = number | string;
export type GroupId = number | string;

export type PathParam = number | string;

declare const endpointBrand: unique symbol;

export interface Endpoint {
  /** Encoded path relative to `/api/v4`, without a leading slash, e.g. `projects/acme%2Fapi/jobs`. */
  readonly path: string;
  /** The same path with every parameter replaced by `:param`: low cardinality, for metrics and logs. */
  readonly route: string;
  readonly [endpointBrand]: true;
}

/**
 * A tagged template knows no parameter names, so a parameter is named by its place:
 * `path parameter #2 of projects/:param/registry/repositories/:param/tags (after "repositories/")`.
 */
function describeParam(strings: TemplateStringsArray, index: number): string {
  const route = strings.reduce((out, part, i) => (i === 0 ? part : `${out}:param${part}`), '');
  const before = strings[index].split('/').slice(-2).join('/');
  return `path parameter #${index + 1} of ${route}${before ? ` (after "${before}")` : ''}`;
}

/**
 * `undefined`, `null` and NaN reach here despite the types when a forge answer lacked a field (or a config value is
 * missing); sent, they would address `.../undefined/...` or `projects/NaN/...`, come back as a puzzling 404, or hit
 * another resource. Refused before any request.
 */
function encodeParam(value: unknown, strings: TemplateStringsArray, index: number): string {
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) {
      throw new TypeError(`${describeParam(strings, index)} must be an integer, got ${value}`);
    }
    return String(value);
  }
  if (typeof value !== 'string') {
    const kind = typeof value;
    const got =
      value === null ? 'null' : value === undefined ? 'undefined' : `${kind === 'object' ? 'an' : 'a'} ${kind}`;
    throw new TypeError(`${describeParam(strings, index)} must be a number or a string, got ${got}`);
  }
  // An empty segment would silently address another endpoint (`projects//jobs`); `.` and `..` survive
  // encodeURIComponent and would be resolved as relative segments by proxies.
  if (value === '' || value === '.' || value === '..') {
    throw new TypeError(`${describeParam(strings, index)} must be a non-empty name, got ${JSON.stringify(value)}`);
  }
  return encodeURIComponent(value);
}

/** `endpoint\`projects/${'acme/api'}/jobs\`` → path `projects/acme%2Fapi/jobs`, route `projects/:param/jobs`. */
export function endpoint(strings: TemplateStringsArray, ...params: PathParam[]): Endpoint {
  let path = strings[0];
  let route = strings[0];
  params.forEach((param: unknown, i) => {
    path += encodeParam(param, strings, i) + strings[i + 1];
    route += ':param' + strings[i + 1];
  });
  return { path, route } as Endpoint;
}

export type QueryScalar = string | number | boolean | Date;
export type QueryValue =
  QueryScalar | readonly QueryScalar[] | Readonly<Record<string, QueryScalar>> | null | undefined;
export type Query = Readonly<Record<string, QueryValue>>;

function scalar(value: QueryScalar): string {
  return value instanceof Date ? value.toISOString() : String(value);
}

/**
 * Arrays go out as repeated `name[]=v` (GitLab's REST API conventions); a plain object as `name[key]=v`, the form
 * of the Users API's `custom_attributes[key]` filter. Undefined and null are omitted, never sent as "null".
 */
export function buildQuery(query: Query | undefined): string {
  if (!query) return '';
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value === undefined || value === null) continue;
    if (Array.isArray(value)) {
      for (const item of value as readonly QueryScalar[]) params.append(`${name}[]`, scalar(item));
    } else if (typeof value === 'object' && !(value instanceof Date)) {
      for (const [key, item] of Object.entries(value)) params.append(`${name}[${key}]`, scalar(item));
    } else {
      params.append(name, scalar(value));
    }
  }
  const text = params.toString();
  return text ? `?${text}` : '';
}

import type { Reply, RequestContext } from './context';

export type Handler = (ctx: RequestContext) => Reply | Promise<Reply>;

/** How a route authenticates: a personal access token (the default), a CI job token, or not at all. */
export type AuthMode = 'user' | 'job' | 'none';

interface Route {
  method: string;
  segments: string[];
  auth: AuthMode;
  handler: Handler;
}

export type RouteMatch =
  | { kind: 'found'; handler: Handler; auth: AuthMode; params: Record<string, string> }
  | { kind: 'method-not-allowed' }
  | { kind: 'not-found' };

/** A minimal path router: `/projects/:id/jobs/:job_id`; segments match whole, params are percent-decoded. */
export class Router {
  private readonly routes: Route[] = [];

  get(pattern: string, handler: Handler, auth: AuthMode = 'user'): this {
    return this.on('GET', pattern, handler, auth);
  }

  post(pattern: string, handler: Handler, auth: AuthMode = 'user'): this {
    return this.on('POST', pattern, handler, auth);
  }

  put(pattern: string, handler: Handler, auth: AuthMode = 'user'): this {
    return this.on('PUT', pattern, handler, auth);
  }

  delete(pattern: string, handler: Handler, auth: AuthMode = 'user'): this {
    return this.on('DELETE', pattern, handler, auth);
  }

  on(method: string, pattern: string, handler: Handler, auth: AuthMode = 'user'): this {
    this.routes.push({ method, segments: split(pattern), auth, handler });
    return this;
  }

  match(method: string, path: string): RouteMatch {
    const segments = split(path);
    let pathKnown = false;
    for (const route of this.routes) {
      const params = matchSegments(route.segments, segments);
      if (!params) continue;
      // HEAD is answered like GET, as by the forge.
      if (route.method === method || (method === 'HEAD' && route.method === 'GET')) {
        return { kind: 'found', handler: route.handler, auth: route.auth, params };
      }
      pathKnown = true;
    }
    return pathKnown ? { kind: 'method-not-allowed' } : { kind: 'not-found' };
  }
}

function split(path: string): string[] {
  return path.split('/').filter((segment) => segment !== '');
}

function matchSegments(pattern: string[], actual: string[]): Record<string, string> | undefined {
  if (pattern.length !== actual.length) return undefined;
  const params: Record<string, string> = {};
  for (const [i, expected] of pattern.entries()) {
    if (expected.startsWith(':')) {
      try {
        params[expected.slice(1)] = decodeURIComponent(actual[i]);
      } catch {
        return undefined;
      }
    } else if (expected !== actual[i]) {
      return undefined;
    }
  }
  return params;
}

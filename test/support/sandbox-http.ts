/**
 * A tiny fetch wrapper for tests that talk to the sandbox over real HTTP (deliberately not the Forgewarden client,
 * so the sandbox is tested on its own).
 */
export interface SandboxResponse {
  status: number;
  headers: Headers;
  text: string;
  /** The parsed body when it is JSON, otherwise undefined. */
  json: unknown;
}

export interface CallOptions {
  method?: string;
  token?: string;
  headers?: Record<string, string>;
  /** Sent as JSON. */
  body?: unknown;
}

export async function call(baseUrl: string, path: string, options: CallOptions = {}): Promise<SandboxResponse> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token !== undefined) headers['PRIVATE-TOKEN'] = options.token;
  if (options.body !== undefined) headers['Content-Type'] = 'application/json';
  const response = await fetch(`${baseUrl}${path}`, {
    method: options.method ?? 'GET',
    headers,
    body: options.body !== undefined ? JSON.stringify(options.body) : undefined,
  });
  const text = await response.text();
  const isJson = (response.headers.get('content-type') ?? '').includes('application/json') && text !== '';
  return {
    status: response.status,
    headers: response.headers,
    text,
    json: isJson ? (JSON.parse(text) as unknown) : undefined,
  };
}

/** `call` bound to the API prefix and a token. */
export function apiClient(baseUrl: string, token?: string) {
  return (path: string, options: CallOptions = {}): Promise<SandboxResponse> =>
    call(baseUrl, `/api/v4${path}`, { token, ...options });
}

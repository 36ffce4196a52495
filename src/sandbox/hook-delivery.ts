import { Agent, request } from 'undici';

/**
 * The sandbox's only outgoing HTTP: webhook deliveries (a `POST` of the event's JSON to the hook's URL), the way the
 * forge's `WebHookService#make_request` sends them. A URL with `user:password@` is sent without it and with basic
 * auth instead; redirects are not followed (the forge counts a 3xx as delivered); with `enable_ssl_verification`
 * off the receiver's certificate is not checked. Nothing here retries: the forge does not either (see
 * hooks-state.ts).
 */

export interface DeliveryRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  verifyTls: boolean;
}

export interface DeliveryOutcome {
  /** The receiver's status; null when no answer came (refused, reset, timed out). */
  status: number | null;
  /** Why no answer came. */
  error: string | null;
  /** The start of the receiver's answer (the forge keeps 8 KiB of it for display). */
  responseBody: string;
  durationMs: number;
}

/** The forge keeps this much of a receiver's answer (`WebHookService::RESPONSE_BODY_SIZE_LIMIT`). */
const RESPONSE_BODY_LIMIT = 8 * 1024;

export class HookDeliveryClient {
  private readonly agents = new Map<boolean, Agent>();
  private readonly inFlight = new Set<AbortController>();
  private closed = false;

  async post(delivery: DeliveryRequest): Promise<DeliveryOutcome> {
    const startedAt = performance.now();
    const elapsed = (): number => Math.round(performance.now() - startedAt);
    if (this.closed) return { status: null, error: 'sandbox closed', responseBody: '', durationMs: 0 };
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, delivery.timeoutMs);
    this.inFlight.add(controller);
    try {
      const { url, basicAuth } = withoutUserinfo(delivery.url);
      const headers = basicAuth ? { ...delivery.headers, Authorization: `Basic ${basicAuth}` } : delivery.headers;
      const response = await request(url, {
        method: 'POST',
        headers,
        body: delivery.body,
        dispatcher: this.agent(delivery.verifyTls),
        signal: controller.signal,
        headersTimeout: delivery.timeoutMs,
        bodyTimeout: delivery.timeoutMs,
      });
      const text = await response.body.text();
      return {
        status: response.statusCode,
        error: null,
        responseBody: text.slice(0, RESPONSE_BODY_LIMIT),
        durationMs: elapsed(),
      };
    } catch (error) {
      const reason = timedOut ? `timed out after ${delivery.timeoutMs} ms` : describe(error);
      return { status: null, error: reason, responseBody: '', durationMs: elapsed() };
    } finally {
      clearTimeout(timer);
      this.inFlight.delete(controller);
    }
  }

  /** Aborts deliveries in flight and closes the connections; later posts fail at once. */
  async close(): Promise<void> {
    this.closed = true;
    for (const controller of this.inFlight) controller.abort();
    const agents = [...this.agents.values()];
    this.agents.clear();
    await Promise.all(agents.map((agent) => agent.destroy().catch(() => undefined)));
  }

  private agent(verifyTls: boolean): Agent {
    let agent = this.agents.get(verifyTls);
    if (!agent) {
      agent = new Agent({ connect: { rejectUnauthorized: verifyTls }, keepAliveTimeout: 1_000, connections: 8 });
      this.agents.set(verifyTls, agent);
    }
    return agent;
  }
}

/** `https://user:pass@host/x` → the URL without credentials and `user:pass` for basic auth, as the forge sends it. */
function withoutUserinfo(raw: string): { url: string; basicAuth?: string } {
  const url = new URL(raw);
  if (url.username === '' && url.password === '') return { url: raw };
  const credentials = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
  url.username = '';
  url.password = '';
  return { url: url.href, basicAuth: Buffer.from(credentials).toString('base64') };
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as { code?: unknown }).code;
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : '';
  return `${typeof code === 'string' ? `${code} ` : ''}${error.message}${cause}`;
}

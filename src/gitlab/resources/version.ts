import { endpoint } from '../transport/endpoint';
import type { Transport } from '../transport/transport';
import type { ForgeVersion } from '../types/version';

/** `GET /version` (GitLab's public API docs, Version API; beyond the forge's API specification). */
export class VersionResource {
  constructor(private readonly transport: Transport) {}

  /** The forge's release and revision; any valid token may read it. */
  show(): Promise<ForgeVersion> {
    return this.transport.json<ForgeVersion>({ method: 'GET', endpoint: endpoint`version` });
  }
}

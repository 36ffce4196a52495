import type { AppConfig } from '../config/schema';
import type { ProjectRef } from '../config/validators';
import { EngineService } from '../engine/engine.service';
import { GitlabClient } from '../gitlab/client';
import type { ProjectHook } from '../gitlab/types/hooks';
import { EXIT_INVALID_CONFIG } from './config-file';
import { renderTable } from './table';
import { type AppCommandOptions, withApp } from './with-app';

export interface HooksOptions extends AppCommandOptions {
  /** The daemon's webhook URL as the forge reaches it: `https://forgewarden.example.com/webhooks/gitlab`. */
  url?: string;
  /** `install`: give hooks already in place the configured secret token too (after it was changed). */
  resetToken?: boolean;
}

/** The events the daemon acts on; every other kind is left off so the forge sends nothing it would ignore. */
const WANTED = { job_events: true, pipeline_events: true, push_events: false } as const;

/** One project's hook, what it needs, and what came of it. */
interface HookLine {
  readonly project: ProjectRef;
  readonly hook: string;
  readonly status: string;
  readonly failed?: boolean;
}

/**
 * `hooks install|list|remove`: the daemon's webhook on every project a policy takes events for (job_retry's projects,
 * globs resolved), through the project hooks API. Its own hook is the one whose URL is `--url`; other hooks are never
 * touched. A hook the forge disabled is reported, not enabled: only a successful test delivery enables it again.
 * `install` and `remove` follow the file's `dry_run` (or `--dry-run`/`--no-dry-run`) like `once`: a dry run
 * says what it would do. Installing twice changes nothing the second time.
 */
export async function hooksCommand(action: 'install' | 'list' | 'remove', options: HooksOptions): Promise<number> {
  const url = options.url;
  if (!url || !/^https?:\/\/[^/\s]+/i.test(url)) {
    process.stderr.write(
      `forgewarden hooks ${action}: --url must be the daemon's webhook URL as the forge reaches it, such as https://forgewarden.example.com/webhooks/gitlab\n`,
    );
    return EXIT_INVALID_CONFIG;
  }
  // Installing needs the file's webhooks section: said from the file alone, before contacting Redis or the forge.
  const notEnabled = (config: AppConfig): string | undefined =>
    action === 'install' && (!config.webhooks.enabled || config.webhooks.secret_token === undefined)
      ? 'webhooks are not enabled in the policy file; set webhooks.enabled: true and webhooks.secret_token first'
      : undefined;
  return withApp(
    `hooks ${action}`,
    options,
    async (app, config) => {
      const secret = config.webhooks.secret_token;
      const projects = await app.get(EngineService).webhookProjects();
      if (projects.length === 0) {
        process.stdout.write('no policy takes webhook events (job_retry does); nothing to do\n');
        return 0;
      }
      const client = app.get(GitlabClient);
      const dryRun = config.dry_run;
      const lines: HookLine[] = [];
      for (const { project } of projects) {
        try {
          const own = await ownHooks(client, project, url);
          if (action === 'list') lines.push(listLine(project, own));
          else if (action === 'install')
            lines.push(
              await install(client, project, own, {
                url,
                secret: secret ?? '',
                dryRun,
                resetToken: options.resetToken === true,
              }),
            );
          else lines.push(await remove(client, project, own, dryRun));
        } catch (error) {
          lines.push({
            project,
            hook: '-',
            status: `failed: ${error instanceof Error ? error.message : String(error)}`,
            failed: true,
          });
        }
      }
      process.stdout.write(
        `${renderTable(
          ['PROJECT', 'HOOK', 'STATUS'],
          lines.map((line) => [String(line.project), line.hook, line.status]),
        )}\n`,
      );
      process.stdout.write(summary(action, lines, dryRun));
      return lines.some((line) => line.failed) ? 1 : 0;
    },
    action === 'list' ? 'look' : 'check',
    notEnabled,
  );
}

/** The project's hooks whose URL is the daemon's (the forge keeps URLs as given; compared without a trailing slash). */
async function ownHooks(client: GitlabClient, project: ProjectRef, url: string): Promise<ProjectHook[]> {
  const wanted = url.replace(/\/+$/, '');
  const own: ProjectHook[] = [];
  for await (const hook of client.projectHooks.all(project))
    if (hook.url.replace(/\/+$/, '') === wanted) own.push(hook);
  return own;
}

function missingEvents(hook: ProjectHook): string[] {
  return Object.entries(WANTED)
    .filter(([flag, on]) => hook[flag as keyof typeof WANTED] !== on)
    .map(([flag, on]) => `${flag} ${on ? 'on' : 'off'}`);
}

function listLine(project: ProjectRef, own: readonly ProjectHook[]): HookLine {
  const [hook] = own;
  if (!hook) return { project, hook: '-', status: 'none' };
  const missing = missingEvents(hook);
  const state =
    hook.alert_status === 'executable'
      ? 'active'
      : hook.alert_status === 'temporarily_disabled'
        ? `temporarily disabled until ${hook.disabled_until ?? '?'}`
        : 'disabled by the forge';
  return {
    project,
    hook: String(hook.id),
    status: missing.length === 0 ? state : `${state}; needs ${missing.join(', ')}`,
  };
}

async function install(
  client: GitlabClient,
  project: ProjectRef,
  own: readonly ProjectHook[],
  { url, secret, dryRun, resetToken }: { url: string; secret: string; dryRun: boolean; resetToken: boolean },
): Promise<HookLine> {
  const [hook] = own;
  if (!hook) {
    if (dryRun) return { project, hook: '-', status: 'would create it' };
    const created = await client.projectHooks.create(project, {
      url,
      token: secret,
      ...WANTED,
      enable_ssl_verification: true,
    });
    return { project, hook: String(created.id), status: 'created' };
  }
  const missing = missingEvents(hook);
  // An edit does not enable a hook the forge disabled after failed deliveries; only a successful test delivery does.
  const disabled =
    hook.alert_status === 'executable'
      ? ''
      : `; the forge disabled it after failed deliveries: its Test button (Settings → Webhooks) enables it again`;
  // The forge never shows a hook's token, so a changed secret cannot be seen: --reset-token sends it to every hook.
  if (missing.length === 0 && !resetToken) return { project, hook: String(hook.id), status: `in place${disabled}` };
  const change = [...missing, ...(resetToken ? ['secret token'] : [])].join(', ');
  if (dryRun) return { project, hook: String(hook.id), status: `would update: ${change}${disabled}` };
  // The token goes with every edit: an edit that changes the URL would otherwise clear it.
  await client.projectHooks.edit(project, hook.id, { url, token: secret, ...WANTED });
  return { project, hook: String(hook.id), status: `updated: ${change}${disabled}` };
}

async function remove(
  client: GitlabClient,
  project: ProjectRef,
  own: readonly ProjectHook[],
  dryRun: boolean,
): Promise<HookLine> {
  if (own.length === 0) return { project, hook: '-', status: 'none' };
  const ids = own.map((hook) => String(hook.id)).join(', ');
  if (dryRun) return { project, hook: ids, status: 'would remove it' };
  for (const hook of own) await client.projectHooks.remove(project, hook.id);
  return { project, hook: ids, status: 'removed' };
}

function summary(action: string, lines: readonly HookLine[], dryRun: boolean): string {
  const failed = lines.filter((line) => line.failed).length;
  const tail = failed > 0 ? `; ${failed} failed` : '';
  if (action === 'list') return `${lines.length} projects${tail}\n`;
  const hint = dryRun ? ' (dry run: nothing changed; --no-dry-run to apply)' : '';
  const changed = lines.filter((line) => /^(created|updated|removed)/.test(line.status)).length;
  const would = lines.filter((line) => line.status.startsWith('would')).length;
  return `${lines.length} projects, ${dryRun ? `${would} would change` : `${changed} changed`}${tail}${hint}\n`;
}

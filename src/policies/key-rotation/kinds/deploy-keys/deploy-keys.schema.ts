import { z } from 'zod';
import { period, projectSelection, re2List, duration } from '../../../../config/validators';

/** The `deploy_keys` entries of a key_rotation policy. */

export const deployKeysSchema = z
  .strictObject({
    projects: projectSelection().describe(
      'Projects whose deploy keys are rotated: by id (42), full path (acme/api) or glob ("acme/*" the group\'s own, "acme/**" with its subgroups); a quoted leading "!" excludes. A key shared by several of them is rotated once, on all of them.',
    ),
    include_archived: z
      .boolean({ error: 'expected true or false' })
      .default(false)
      .describe(
        'Whether globs select archived projects too; a project listed by id or path is covered even when archived.',
      ),
    titles: re2List().describe('RE2 expressions on the deploy key title, unanchored; one must match.'),
    // A period, not a delay: at 0s every deploy key is due again on every pass, so keys would be replaced endlessly.
    rotate_after: period().describe('Rotate a deploy key once it is this old (by created_at).'),
    grace: duration().describe(
      'Both keys live this long after the new one is verified; then the old one is removed from each project.',
    ),
  })
  .describe('Deploy keys to rotate once they are old.');

export type DeployKeysRule = z.output<typeof deployKeysSchema>;

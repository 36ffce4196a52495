import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/**
 * Every relative link in README.md, docs/*.md and the folders' READMEs points at a file or folder of the repository, and a link to a
 * heading (`file.md#heading`, `#heading`) at a heading that exists, as GitHub names it. Moving a section must not
 * leave a link behind.
 */
const ROOT = resolve(__dirname, '../..');
const FOLDER_READMES = ['src/policies', 'src/gitlab', 'src/sandbox', 'test/chaos', 'deploy'].map((folder) =>
  join(ROOT, folder, 'README.md'),
);
const DOCS = [
  join(ROOT, 'README.md'),
  ...readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => join(ROOT, 'docs', name)),
  ...FOLDER_READMES,
];

/** The text outside fenced code blocks and inline code, where a `](` is not a link. */
function prose(markdown: string): string {
  return markdown.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '``');
}

function links(markdown: string): string[] {
  return [...prose(markdown).matchAll(/\]\(([^)\s]+)\)/g)]
    .map((match) => match[1])
    .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target));
}

/** GitHub's anchors: lower case, punctuation dropped, spaces as hyphens, `-1`, `-2`... for repeats. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  for (const [, heading] of prose(markdown.replace(/`([^`\n]*)`/g, '$1')).matchAll(/^#{1,6}\s+(.+?)\s*#*$/gm)) {
    const slug = heading
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    result.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return result;
}

describe('links in the README and docs/', () => {
  it('finds the documents and their links', () => {
    expect(DOCS.length).toBeGreaterThan(1);
    expect(links(readFileSync(join(ROOT, 'README.md'), 'utf8')).length).toBeGreaterThan(0);
  });

  it.each(DOCS.map((file) => [relative(ROOT, file), file]))('%s links only to what exists', (_name, file) => {
    const broken: string[] = [];
    for (const link of links(readFileSync(file, 'utf8'))) {
      const [path, anchor] = link.split('#', 2) as [string, string | undefined];
      const target = path === '' ? file : resolve(dirname(file), decodeURI(path));
      if (!target.startsWith(ROOT) || !existsSync(target)) {
        broken.push(`${link}: no such file`);
      } else if (
        anchor !== undefined &&
        statSync(target).isFile() &&
        target.endsWith('.md') &&
        !anchors(readFileSync(target, 'utf8')).has(anchor)
      ) {
        broken.push(`${link}: no such heading`);
      }
    }
    expect(broken).toEqual([]);
  });
});

/**
 * Ids of one kind. While the world is seeded, omitted ids fill the gaps around explicit ones; once sealed, every new
 * record gets an id above all earlier ones, as on the forge, whose ids only grow (pollers rely on that).
 */
class IdSequence {
  private readonly used = new Set<number>();
  private cursor = 0;
  private highest = 0;
  private sealed = false;

  reserve(id: number): void {
    this.used.add(id);
    this.highest = Math.max(this.highest, id);
  }

  next(): number {
    if (this.sealed) return ++this.highest;
    do this.cursor += 1;
    while (this.used.has(this.cursor));
    this.reserve(this.cursor);
    return this.cursor;
  }

  seal(): void {
    this.sealed = true;
  }
}

/**
 * The id sequences of the sandbox. Each area reserves the world's explicit ids of its kinds before it assigns any,
 * so generated ids never collide with them.
 */
export class SandboxIds {
  /** Groups and personal namespaces share `namespace`; user SSH keys and deploy keys share `key`, as on the forge. */
  private readonly sequences = {
    user: new IdSequence(),
    namespace: new IdSequence(),
    project: new IdSequence(),
    pipeline: new IdSequence(),
    job: new IdSequence(),
    repository: new IdSequence(),
    key: new IdSequence(),
    gpgKey: new IdSequence(),
    protectedBranch: new IdSequence(),
    label: new IdSequence(),
    issue: new IdSequence(),
    mergeRequest: new IdSequence(),
    epic: new IdSequence(),
    labelEvent: new IdSequence(),
    weightEvent: new IdSequence(),
    /** Personal access tokens, project and group access tokens alike (one table on the forge). */
    accessToken: new IdSequence(),
    deployToken: new IdSequence(),
  };

  reserve(kind: IdKind, id: number | undefined): void {
    if (id !== undefined) this.sequences[kind].reserve(id);
  }

  next(kind: IdKind): number {
    return this.sequences[kind].next();
  }

  /** Ends seeding: from now on ids only grow. */
  seal(): void {
    for (const sequence of Object.values(this.sequences)) sequence.seal();
  }
}

export type IdKind = keyof SandboxIds['sequences'];

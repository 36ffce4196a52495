import { askForge } from '../../src/forge/forge-health';
import { GitlabClient } from '../../src/gitlab';
import { type RunningSandbox, startSandbox } from '../../src/sandbox';
import { asPerson } from '../support/person';
import { baseWorld, USER_TOKEN } from '../support/world-builders';

/** What the daemon and doctor say of the token, as the forge answers for it. */
describe('the look at the forge', () => {
  let sandbox: RunningSandbox;
  let client: GitlabClient;

  beforeEach(async () => {
    sandbox = await startSandbox({ world: baseWorld() });
    client = new GitlabClient({ url: sandbox.url, token: USER_TOKEN });
  });

  afterEach(async () => {
    await client.close();
    await sandbox.close();
  });

  it("names a blocked account as such (the forge's 403), not a missing scope, and the token works again once unblocked", async () => {
    expect((await askForge(client, sandbox.url, 'policies.yml')).state).toBe('ok');
    expect((await asPerson(sandbox, 'POST', '/users/3/block')).status).toBe(201);
    const blocked = await askForge(client, sandbox.url, 'policies.yml');
    expect(blocked).toMatchObject({
      state: 'refused',
      message: expect.stringMatching(
        /403 Forbidden: .*blocked.*\): the token's user is blocked; an administrator must unblock it$/,
      ),
    });
    expect((await asPerson(sandbox, 'POST', '/users/3/unblock')).status).toBe(201);
    expect((await askForge(client, sandbox.url, 'policies.yml')).state).toBe('ok');
  });
});

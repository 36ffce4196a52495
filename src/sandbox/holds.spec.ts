import { HoldRules } from './holds';

describe('held requests', () => {
  it('holds the next matching request until released, and lets others and later ones pass', async () => {
    const holds = new HoldRules();
    const hold = holds.add({ method: 'POST', path: '/retry$' });
    const order: string[] = [];
    const held = holds.pass('POST', '/api/v4/projects/1/jobs/7/retry').then(() => order.push('held request goes on'));
    await holds.pass('GET', '/api/v4/projects/1/jobs/7/retry');
    order.push('other method passes');
    await holds.reached(hold.id);
    expect(holds.get(hold.id)).toMatchObject({ held: 1, waiting: 1 });
    order.push('person acts');
    expect(holds.release(hold.id)).toBe(true);
    await held;
    // Released holds are gone: the next matching request passes.
    await holds.pass('POST', '/api/v4/projects/1/jobs/8/retry');
    expect(order).toEqual(['other method passes', 'person acts', 'held request goes on']);
    expect(holds.release(hold.id)).toBe(false);
  });

  it('holds only the agent named, so a person’s requests pass while the bot waits', async () => {
    const holds = new HoldRules();
    const hold = holds.add({ agent: 'forgewarden' });
    await holds.pass('DELETE', '/api/v4/user/keys/5', 'node');
    const bot = holds.pass('DELETE', '/api/v4/user/keys/5', 'forgewarden/0.1.0');
    await holds.reached(hold.id);
    expect(holds.get(hold.id)).toMatchObject({ agent: 'forgewarden', held: 1, waiting: 1 });
    holds.release(hold.id);
    await bot;
  });

  it('lets `after` matching requests through before holding', async () => {
    const holds = new HoldRules();
    const hold = holds.add({ path: '/tags$', after: 1 });
    await holds.pass('GET', '/api/v4/projects/1/registry/repositories/12/tags');
    expect(holds.get(hold.id)).toMatchObject({ held: 0 });
    const second = holds.pass('GET', '/api/v4/projects/1/registry/repositories/12/tags');
    await holds.reached(hold.id);
    holds.release(hold.id);
    await second;
  });

  it('holds `times` requests, and reached() waits for the count', async () => {
    const holds = new HoldRules();
    const hold = holds.add({ path: '^/api/v4/x$', times: 2 });
    const first = holds.pass('GET', '/api/v4/x');
    const both = holds.reached(hold.id, 2);
    let reachedBoth = false;
    void both.then(() => (reachedBoth = true));
    await Promise.resolve();
    expect(reachedBoth).toBe(false);
    const second = holds.pass('GET', '/api/v4/x');
    await both;
    expect(holds.get(hold.id)).toMatchObject({ held: 2, waiting: 2 });
    holds.releaseAll();
    await Promise.all([first, second]);
    expect(holds.list()).toEqual([]);
  });
});

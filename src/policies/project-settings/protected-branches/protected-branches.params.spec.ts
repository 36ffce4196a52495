import { sameProtection } from './protected-branches.params';

describe('project_settings params: protected branches', () => {
  it('tells a kept protection from another whatever the order of its keys or an empty list, and refuses one that is none', () => {
    const kept = {
      name: 'main',
      push_access_level: 40,
      merge_access_level: 30,
      allow_force_push: false,
      allowed_to_push: [{ user_id: 3 }],
    };
    expect(
      sameProtection(kept, {
        allowed_to_push: [{ user_id: 3 }],
        allow_force_push: false,
        merge_access_level: 30,
        push_access_level: 40,
        name: 'main',
        allowed_to_merge: [],
      }),
    ).toBe(true);
    expect(sameProtection(kept, { ...kept, allowed_to_push: [{ user_id: 4 }] })).toBe(false);
    expect(sameProtection(kept, { ...kept, push_access_level: 'maintainer' })).toBe(false);
    expect(sameProtection(undefined, undefined)).toBe(false);
  });
});

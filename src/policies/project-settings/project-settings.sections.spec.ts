import { projectSettingsActions } from './project-settings.actions';
import { SECTIONS } from './project-settings.sections';

describe('project_settings sections', () => {
  it('each name their own actions, and the policy type has every one of them', () => {
    const names = SECTIONS.flatMap((section) => Object.keys(section.actions));
    // A name two sections used would leave one of them without its effect.
    expect(new Set(names).size).toBe(names.length);
    expect(Object.keys(projectSettingsActions).sort()).toEqual([...names].sort());
    expect(names).toEqual([
      'protect_branch',
      'reprotect_branch',
      'edit_protected_branch',
      'unprotect_branch',
      'forget_interrupted_protection',
      'edit_approval_settings',
      'create_approval_rule',
      'edit_approval_rule',
      'delete_approval_rule',
      'set_integration',
      'disable_integration',
    ]);
  });
});

import { z } from 'zod';
import { defineAction, param, readParams } from './action-params';
import type { PolicyContext } from './policy';

const schema = z.object({
  project: param.integer(),
  name: param.text(),
  source: param.idOrPath().optional(),
  keep: param.flag().optional(),
});

describe('readParams', () => {
  it('reads params through the schema, typed', () => {
    expect(readParams('fake', schema, { project: 1, name: 'api', source: 'acme/api', keep: true })).toEqual({
      project: 1,
      name: 'api',
      source: 'acme/api',
      keep: true,
    });
  });

  it.each([
    [{ name: 'api' }, 'fake: action parameter "project" must be an integer, got undefined'],
    [{ project: 1.5, name: 'api' }, 'fake: action parameter "project" must be an integer, got 1.5'],
    [{ project: 2 ** 60, name: 'api' }, `fake: action parameter "project" must be an integer, got ${2 ** 60}`],
    [{ project: 1, name: 7 }, 'fake: action parameter "name" must be a string, got 7'],
    [
      { project: 1, name: 'api', source: true },
      'fake: action parameter "source" must be a path or an integer, got true',
    ],
    [{ project: 1, name: 'api', keep: 'yes' }, 'fake: action parameter "keep" must be true or false, got "yes"'],
  ])('refuses %j with a TypeError naming the parameter', (params, message) => {
    expect(() => readParams('fake', schema, params)).toThrow(new TypeError(message));
  });
});

describe('defineAction', () => {
  it('hands the effect the params as read, and never calls it with params that do not fit', async () => {
    const seen: unknown[] = [];
    const action = defineAction({
      read: (params) => readParams('fake', schema, params),
      unchecked: 'a test action changes nothing',
      run: async (target) => {
        seen.push(target);
        return { detail: `did ${target.name}` };
      },
    });
    const context = {} as PolicyContext;
    await expect(action.run({ project: 1, name: 'api' }, context)).resolves.toEqual({ detail: 'did api' });
    await expect(action.run({ project: 'one', name: 'api' }, context)).rejects.toThrow(TypeError);
    expect(seen).toEqual([{ project: 1, name: 'api' }]);
    expect(action).toMatchObject({ unchecked: 'a test action changes nothing' });
    expect(action.precondition).toBeUndefined();
  });

  it('hands the precondition the params as read, and says what changed', async () => {
    const action = defineAction({
      read: (params) => readParams('fake', schema, params),
      precondition: async (target) => (target.name === 'gone' ? `${target.name} changed` : undefined),
      run: async () => undefined,
    });
    const context = {} as PolicyContext;
    await expect(action.precondition?.({ project: 1, name: 'api' }, context)).resolves.toBeUndefined();
    await expect(action.precondition?.({ project: 1, name: 'gone' }, context)).resolves.toBe('gone changed');
    await expect(action.precondition?.({ project: 'one', name: 'api' }, context)).rejects.toThrow(TypeError);
  });
});

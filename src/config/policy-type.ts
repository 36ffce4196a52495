import { z } from 'zod';

/** What every policy entry has, whatever its type. */
export const basePolicyShape = {
  name: z.string({ error: 'every policy needs a name' }).regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/, {
    // Names go into Redis keys, metric labels and the audit trail, so they stay short and plain.
    error: 'a policy name is 1 to 63 letters, digits, ".", "_" or "-", starting with a letter or digit',
  }),
  dry_run: z.boolean().optional(),
};

/**
 * A policy type contributes its own sub-schema; the loader knows only the types it is given, so an unknown `type`
 * is an error that lists the known ones.
 */
export interface PolicyTypeDefinition<Shape extends z.ZodRawShape = z.ZodRawShape> {
  readonly type: string;
  readonly description: string;
  readonly schema: z.ZodObject<Shape & typeof basePolicyShape & { type: z.ZodLiteral<string> }, z.core.$strict>;
}

export function definePolicyType<const Type extends string, Shape extends z.ZodRawShape>(
  type: Type,
  description: string,
  shape: Shape,
) {
  const schema = z.strictObject({ ...basePolicyShape, type: z.literal(type), ...shape }).describe(description);
  return { type, description, schema } as const;
}

/** The fields every policy has once validated; each policy reads its own fields through its own schema's type. */
export interface PolicyConfig {
  readonly name: string;
  readonly type: string;
  readonly dry_run?: boolean;
  readonly [field: string]: unknown;
}

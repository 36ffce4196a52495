import type { z } from 'zod';

/**
 * The keys a schema allows at `path` of `data`, for "did you mean" hints. Only the wrappers the policy schemas use
 * are unwrapped; anything else answers "no known keys", which only drops the hint.
 */
export function knownKeysAt(schema: z.ZodType, data: unknown, path: ReadonlyArray<PropertyKey>): string[] {
  let current: z.core.$ZodType | undefined = schema;
  let value = data;
  for (const segment of [...path, undefined]) {
    current = unwrap(current, value);
    if (segment === undefined) break;
    const def = current?._zod.def;
    if (def?.type === 'object') current = (def as z.core.$ZodObjectDef).shape[String(segment)];
    else if (def?.type === 'array') current = (def as z.core.$ZodArrayDef).element;
    else return [];
    value = typeof value === 'object' && value !== null ? (value as Record<PropertyKey, unknown>)[segment] : undefined;
  }
  const def = current?._zod.def;
  return def?.type === 'object' ? Object.keys((def as z.core.$ZodObjectDef).shape) : [];
}

function unwrap(schema: z.core.$ZodType | undefined, value: unknown): z.core.$ZodType | undefined {
  let current = schema;
  for (let depth = 0; current && depth < 10; depth++) {
    const def = current._zod.def;
    if (def.type === 'optional' || def.type === 'default' || def.type === 'prefault' || def.type === 'nullable') {
      current = (def as z.core.$ZodOptionalDef).innerType;
    } else if (def.type === 'pipe') {
      current = (def as z.core.$ZodPipeDef).in;
    } else if (def.type === 'union') {
      // A discriminated union: take the option whose `type` literal matches the entry's type.
      const type = typeof value === 'object' && value !== null ? (value as Record<string, unknown>).type : undefined;
      const options = (def as z.core.$ZodUnionDef).options;
      current = options.find((option) => {
        const shape = option._zod.def.type === 'object' ? (option._zod.def as z.core.$ZodObjectDef).shape : undefined;
        const literal = shape?.type?._zod.def;
        return (
          literal?.type === 'literal' && (literal as z.core.$ZodLiteralDef<string>).values.includes(type as string)
        );
      });
    } else {
      return current;
    }
  }
  return current;
}

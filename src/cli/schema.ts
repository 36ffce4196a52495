import { configJsonSchema } from '../config/schema';
import { POLICY_TYPES } from '../policies';

export function schemaCommand(): number {
  process.stdout.write(`${JSON.stringify(configJsonSchema(POLICY_TYPES), null, 2)}\n`);
  return 0;
}

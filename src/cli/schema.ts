import { configJsonSchema } from '../config/schema';
import { POLICY_TYPES } from '../policies';
import { testFileJsonSchema } from '../policy-tests/test-file';

/** The JSON Schema of the policy file, or with `tests` of its test files. */
export function schemaCommand(options: { tests?: boolean } = {}): number {
  const schema = options.tests ? testFileJsonSchema() : configJsonSchema(POLICY_TYPES);
  process.stdout.write(`${JSON.stringify(schema, null, 2)}\n`);
  return 0;
}

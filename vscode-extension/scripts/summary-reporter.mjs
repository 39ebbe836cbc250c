// A node:test reporter: one line per test, failure details, then `N passed, N failed`.
export default async function* summary(source) {
  let passed = 0;
  let failed = 0;
  let skipped = 0;
  const failures = [];
  for await (const event of source) {
    if (event.type === 'test:pass' || event.type === 'test:fail') {
      const { name, nesting, details } = event.data;
      // Suites report too; count only leaf tests (a suite's details carry type 'suite').
      if (details?.type === 'suite') {
        continue;
      }
      const indent = '  '.repeat(nesting ?? 0);
      if (event.type === 'test:pass') {
        if (event.data.skip || event.data.todo) {
          skipped += 1;
          yield `${indent}- ${name} (skipped)\n`;
        } else {
          passed += 1;
          yield `${indent}✔ ${name}\n`;
        }
      } else {
        failed += 1;
        const err = details?.error;
        const cause = err?.cause ?? err;
        failures.push(`${name}\n${cause?.stack ?? cause?.message ?? String(cause)}`);
        yield `${indent}✖ ${name}\n`;
      }
    } else if (event.type === 'test:stderr' || event.type === 'test:stdout') {
      yield event.data.message;
    }
  }
  for (const f of failures) {
    yield `\nFAILED: ${f}\n`;
  }
  yield `\nunit: ${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}\n`;
}

// Fails when src/schema.d.ts is not what openapi-typescript makes of
// ../openapi.json today (the document and the types drifted apart): run
// `npm run generate` and commit both.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const dir = mkdtempSync(join(tmpdir(), "lendex-schema-"));
try {
  const fresh = join(dir, "schema.d.ts");
  execFileSync(
    process.execPath,
    ["node_modules/openapi-typescript/bin/cli.js", "../openapi.json", "--output", fresh],
    { stdio: ["ignore", "ignore", "inherit"] },
  );
  if (readFileSync(fresh, "utf8") !== readFileSync("src/schema.d.ts", "utf8")) {
    console.error("src/schema.d.ts differs from a fresh generation: run `npm run generate`");
    process.exit(1);
  }
  console.log("src/schema.d.ts matches ../openapi.json");
} finally {
  rmSync(dir, { recursive: true, force: true });
}

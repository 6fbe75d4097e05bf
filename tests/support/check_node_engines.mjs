// Every npm package the tests install (tests/mcp and tests/serve/js, with
// npm ci) must declare that it runs on the Node.js scripts/test.sh installs
// on a machine without node: Debian bookworm's. A package that needs a newer
// Node fails there at run time, often far from its cause (a version check, a
// missing global), while a machine with a newer Node from elsewhere passes.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

// Debian bookworm's nodejs package (18.20.4+dfsg-1~deb12u3 in
// bookworm-security; `apt-cache policy nodejs` on bookworm), which
// scripts/test.sh installs through scripts/install-deps.sh.
const bookworm_node = "18.20.4";

const tests_dir = fileURLToPath(new URL("..", import.meta.url));
const package_dirs = [join(tests_dir, "mcp"), join(tests_dir, "serve/js")];

let semver;
try {
  semver = createRequire(join(tests_dir, "mcp/package.json"))("semver");
} catch {
  console.error("semver is not installed: run `npm ci --prefix tests/mcp` (scripts/test.sh does)");
  process.exit(1);
}

// The package directories under a node_modules directory, nested ones
// (a second version of a package beneath its dependant) included.
function installed_packages(node_modules) {
  const found = [];
  if (!existsSync(node_modules)) return found;
  for (const entry of readdirSync(node_modules, { withFileTypes: true })) {
    if (!entry.isDirectory() || entry.name.startsWith(".")) continue;
    const dir = join(node_modules, entry.name);
    if (entry.name.startsWith("@")) {
      found.push(...installed_packages(dir));
      continue;
    }
    if (existsSync(join(dir, "package.json"))) found.push(dir);
    found.push(...installed_packages(join(dir, "node_modules")));
  }
  return found;
}

const refused = [];
let checked = 0;
for (const dir of package_dirs) {
  const packages = installed_packages(join(dir, "node_modules"));
  if (packages.length === 0) {
    console.error(`nothing is installed in ${dir}: run \`npm ci --prefix ${dir}\` (scripts/test.sh does)`);
    process.exit(1);
  }
  for (const package_dir of packages) {
    const manifest = JSON.parse(readFileSync(join(package_dir, "package.json"), "utf8"));
    ++checked;
    const range = manifest.engines?.node;
    if (range === undefined) continue;
    // A range semver cannot read is refused too: npm could not check it either.
    if (typeof range !== "string" || semver.validRange(range) === null ||
        !semver.satisfies(bookworm_node, range)) {
      refused.push(`${manifest.name}@${manifest.version} wants node ${JSON.stringify(range)} (${package_dir})`);
    }
  }
}

if (refused.length > 0) {
  console.error(`${refused.length} installed npm packages do not run on Debian bookworm's Node ${bookworm_node}:`);
  for (const line of refused) console.error(`  ${line}`);
  process.exit(1);
}
console.log(`${checked} installed npm packages all admit Node ${bookworm_node}`);

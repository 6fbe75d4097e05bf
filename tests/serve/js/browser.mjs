// What the browser tests share: Debian's Chromium (or $TROUPE_CHROMIUM),
// driven by the playwright-core this folder pins (package-lock.json), and
// the check that fails a test with what it expected. A test in another
// folder imports this module, and with it the same playwright-core.

import { existsSync } from "node:fs";

export const chromium_path = process.env.TROUPE_CHROMIUM || "/usr/bin/chromium";

// playwright-core's chromium. Without a Chromium the test is skipped (exit
// 77, ctest's SKIP_RETURN_CODE); without playwright-core it fails.
export async function chromium_or_exit() {
  if (!existsSync(chromium_path)) {
    console.log(`troupe-skip: no Chromium at ${chromium_path} (Debian package chromium)`);
    process.exit(77);
  }
  try {
    return (await import("playwright-core")).chromium;
  } catch (e) {
    console.error("playwright-core is not installed: run npm ci --prefix tests/serve/js (" + e.message + ")");
    process.exit(1);
  }
}

export function check(condition, what) {
  if (!condition) throw new Error("expected " + what);
}

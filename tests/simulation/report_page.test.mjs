// The HTML report of a simulation run, in a real browser: Debian's Chromium
// driven by playwright-core (pinned in tests/serve/js), on the page that
// simulation_report_page writes for the fixture run.
//
//   node report_page.test.mjs SIMULATION_REPORT_PAGE [--screenshot FILE.png]
//
// Exit codes: 0 passed, 1 failed, 77 skipped (no Chromium; ctest's
// SKIP_RETURN_CODE).

import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
// One pinned playwright-core for every browser test: the one tests/serve/js installs.
import { check, chromium_or_exit, chromium_path } from "../serve/js/browser.mjs";

const args = process.argv.slice(2);
const screenshot_at = args.indexOf("--screenshot");
const screenshot = screenshot_at >= 0 ? args.splice(screenshot_at, 2)[1] : null;
const [program] = args;
if (!program) {
  console.error("usage: node report_page.test.mjs SIMULATION_REPORT_PAGE [--screenshot FILE.png]");
  process.exit(2);
}
const chromium = await chromium_or_exit();

const dir = mkdtempSync(join(tmpdir(), "troupe-report-test-"));
const page_path = join(dir, "report.html");
let browser = null;

async function main() {
  execFileSync(program, [page_path], { stdio: "inherit" });
  browser = await chromium.launch({ executablePath: chromium_path, headless: true });
  const context = await browser.newContext({ viewport: { width: 1500, height: 1000 }, colorScheme: "light" });
  const page = await context.newPage();
  page.setDefaultTimeout(20000);
  const problems = [];
  page.on("console", (m) => { if (m.type() === "error") problems.push("console: " + m.text()); });
  page.on("pageerror", (e) => problems.push("page error: " + e.message));
  // Self-contained: the page itself is the only thing the browser fetches.
  const url = pathToFileURL(page_path).href;
  page.on("request", (r) => { if (r.url() !== url) problems.push("request: " + r.url()); });
  await page.goto(url);

  // The text from the log reads as it was written: escaped, not markup.
  check((await page.locator("h1").textContent()) === "town <square>", "the run's name as text");
  check((await page.locator(".question").first().textContent()) === "What do you think of <b>p1</b>?",
        "the interview's question as text");
  check((await page.locator(".question b").count()) === 0, "no element made of the question's text");

  // Every chart is drawn, with a size, and its marks are on screen.
  for (const [id, mark, marks] of [
    ["chart-actions", "rect.bar", 4],
    ["chart-active", "rect.bar", 4],
    ["chart-tokens", "rect.bar", 6],
    ["chart-cost", "rect.bar", 3],
    ["chart-latency", "polyline.line", 2],
    ["chart-spread", "polyline.line", 3],
  ]) {
    const svg = page.locator(`#${id} svg`);
    check((await svg.count()) === 1, `one SVG in #${id}`);
    const box = await svg.boundingBox();
    check(box && box.width > 100 && box.height > 50, `#${id}'s SVG to have a size, got ${JSON.stringify(box)}`);
    const drawn = svg.locator(mark);
    check((await drawn.count()) === marks, `${marks} ${mark} in #${id}, got ${await drawn.count()}`);
    const first = await drawn.first().boundingBox();
    check(first && first.width > 0 && first.height > 0, `#${id}'s first ${mark} to have a size`);
    check((await page.locator(`#${id} .legend li`).count()) > 0, `a legend under #${id}`);
  }
  // Stacked: round 2's reposts sit on its posts, not beside them.
  const bars = page.locator("#chart-actions rect.bar");
  const boxes = await Promise.all([0, 1, 2, 3].map((i) => bars.nth(i).boundingBox()));
  const round2 = boxes.filter((b, i) => i === 1 || i === 2);
  check(Math.abs(round2[0].x - round2[1].x) < 0.5 && Math.abs(round2[0].y - (round2[1].y + round2[1].height)) < 1,
        "round 2's bars stacked, got " + JSON.stringify(round2));

  // The spread: a row a post, most reposted first.
  const rows = page.locator("#spread-table tbody tr");
  check((await rows.count()) === 3, "three posts in the spread table, got " + (await rows.count()));
  const first_row = await rows.first().locator("td").allTextContents();
  check(JSON.stringify(first_row) === JSON.stringify(["1", "p1", "a-1", "1", "4", "4", "2: 2, 3: 2"]),
        "p1's row, got " + JSON.stringify(first_row));
  check((await rows.nth(2).locator("td").nth(2).textContent()) === "@operator", "op1 posted by the operator");
  // Who reposted from whom, behind a disclosure.
  const edges = page.locator("details.edges").first();
  await edges.locator("summary").click();
  const edge_rows = edges.locator("tbody tr");
  check((await edge_rows.count()) === 4, "p1's four reposts");
  check(JSON.stringify(await edge_rows.nth(3).locator("td").allTextContents()) === JSON.stringify(["3", "a-3", "a-6"]),
        "a repost of a repost comes from its reposter");

  if (screenshot) {
    await page.screenshot({ path: screenshot, fullPage: true });
    console.log("screenshot: " + screenshot);
  }
  check(problems.length === 0, "no console errors and no other requests, got:\n" + problems.join("\n"));
}

let failed = false;
try {
  await main();
} catch (e) {
  failed = true;
  console.error("FAILED: " + (e.stack || e.message));
}
if (browser) await browser.close();
rmSync(dir, { recursive: true, force: true });
console.log(failed ? "report page test: FAILED" : "report page test: passed");
process.exit(failed ? 1 : 0);

// The web chat page of `troupe serve`, in a real browser: Debian's Chromium
// driven by playwright-core, against the real server binary with a scripted
// model (deltas, a tool call, more deltas), and a tool call that waits for
// a person's approval.
//
//   node chat_page.test.mjs TROUPE_BINARY [PORT] [--screenshot FILE.png]
//
// PORT 0 (the default) lets the server pick a free one and print it.
// Exit codes: 0 passed, 1 failed, 77 skipped (no Chromium; ctest's
// SKIP_RETURN_CODE).

import { spawn } from "node:child_process";
import { createServer, connect } from "node:net";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { check, chromium_or_exit, chromium_path } from "./browser.mjs";

const key = "sk-web-test-0123456789abcdef";

const args = process.argv.slice(2);
const screenshot_at = args.indexOf("--screenshot");
const screenshot = screenshot_at >= 0 ? args.splice(screenshot_at, 2)[1] : null;
const [binary, port = "0"] = args;
if (!binary) {
  console.error("usage: node chat_page.test.mjs TROUPE_BINARY [PORT] [--screenshot FILE.png]");
  process.exit(2);
}
const chromium = await chromium_or_exit();

// The first reply streams three deltas at once, then (two and a half seconds
// later) calls the calculator; the second streams the answer. The pause is
// what lets the test see the page between the first deltas and the tool call.
const script = [
  {
    chunks: ["Let me ", "work that ", "out."],
    tool_calls: [{ id: "call-1", name: "calculator", arguments: { expression: "12.5 * 8 + 3" } }],
    usage: { input_tokens: 120, output_tokens: 18 },
    delay_ms: 2500,
  },
  { chunks: ["12.5 × 8 + 3 ", "= ", "103."], usage: { input_tokens: 160, output_tokens: 9 } },
];

const dir = mkdtempSync(join(tmpdir(), "troupe-web-test-"));
writeFileSync(join(dir, "script.json"), JSON.stringify(script));
// The same, slower: four seconds between the first deltas and the tool call,
// in which the test reloads the page.
writeFileSync(join(dir, "slow.json"), JSON.stringify([{ ...script[0], delay_ms: 4000 }, script[1]]));
// A model that fails at once, without retries (bad_request is not retried).
const failure = "the scripted model refused (page test)";
writeFileSync(join(dir, "failing.json"), JSON.stringify([{ error: { type: "bad_request", message: failure } }]));
// A clerk whose calculator calls wait for a person's approval.
writeFileSync(join(dir, "clerk.json"), JSON.stringify([
  { tool_calls: [{ id: "call-9", name: "calculator", arguments: { expression: "6 * 7" } }] },
  { chunks: ["6 × 7 ", "= 42."] },
]));
writeFileSync(
  join(dir, "serve.toml"),
  `listen = "127.0.0.1:${port}"
store = "sqlite:${join(dir, "serve.db")}"
drain_deadline_seconds = 5

[[agents]]
id = "calculator"
description = "Does arithmetic with the calculator tool"
provider = "scripted"
script = "script.json"
tools = ["calculator"]
max_iterations = 4
request_deadline_seconds = 60

[[agents]]
id = "slow"
provider = "scripted"
script = "slow.json"
tools = ["calculator"]

[[agents]]
id = "clerk"
provider = "scripted"
script = "clerk.json"
tools = ["calculator"]
approvals = ["calculator"]

[[agents]]
id = "failing"
provider = "scripted"
script = "failing.json"

[[keys]]
key = "${key}"
user = "web-tester"
`);

let server = null;
let server_output = "";
let browser = null;

function start_server() {
  return new Promise((resolve, reject) => {
    server = spawn(binary, ["serve", "--config", join(dir, "serve.toml")], { stdio: ["ignore", "pipe", "pipe"] });
    const timer = setTimeout(() => reject(new Error("the server did not say it was listening within 30 s")), 30000);
    server.on("error", (e) => { clearTimeout(timer); reject(e); });
    server.on("exit", (code) => { clearTimeout(timer); reject(new Error("the server exited with " + code)); });
    server.stderr.on("data", (d) => { server_output += d; });
    server.stdout.on("data", (d) => {
      server_output += d;
      const m = /listening on (http:\/\/[^\s]+)/.exec(server_output);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
  });
}

function stop_server() {
  if (!server || server.exitCode !== null) return Promise.resolve(server ? server.exitCode : 0);
  return new Promise((resolve) => {
    server.removeAllListeners("exit");
    server.on("exit", (code, signal) => resolve(signal ? signal : code));
    server.kill("SIGTERM");
  });
}

// A TCP relay between the browser and the server that can cut every open
// connection at once, as a flaky network would, and notes each request line.
function start_relay(target) {
  const { hostname, port } = new URL(target);
  const sockets = new Set();
  const requests = [];
  const relay = createServer((client) => {
    const upstream = connect(Number(port), hostname);
    client.on("data", (d) => {
      for (const m of d.toString("latin1").matchAll(/^(GET|POST|DELETE) (\S+) HTTP\/1\.1\r$/gm)) requests.push(m[1] + " " + m[2]);
    });
    client.pipe(upstream);
    upstream.pipe(client);
    for (const [one, other] of [[client, upstream], [upstream, client]]) {
      sockets.add(one);
      one.on("error", () => {});
      one.on("close", () => {
        sockets.delete(one);
        other.destroy();
      });
    }
  });
  return new Promise((resolve) => {
    relay.listen(0, "127.0.0.1", () => resolve({
      url: "http://127.0.0.1:" + relay.address().port,
      requests,
      cut: () => { for (const s of sockets) s.destroy(); },
      close: () => relay.close(),
    }));
  });
}

// Every state the open answer passes through, recorded in the page as the
// DOM changes, so the test can ask afterwards what was on screen between
// the first deltas and the tool call without racing the stream.
function record_answer_states() {
  window.__answer_states = [];
  const log = document.getElementById("messages");
  new MutationObserver(() => {
    const answers = log.querySelectorAll(".message.assistant");
    const last = answers[answers.length - 1];
    if (!last) return;
    window.__answer_states.push({
      text: Array.from(last.querySelectorAll(".text"), (t) => t.textContent).join(""),
      tools: last.querySelectorAll(".tool").length,
      busy: last.getAttribute("aria-busy") === "true",
      send_disabled: document.getElementById("send").disabled,
    });
  }).observe(log, { childList: true, subtree: true, characterData: true });
}

async function main() {
  const server_url = await start_server();
  // The browser reaches the server through the relay.
  const relay = await start_relay(server_url);
  const base = relay.url;
  console.log("server at " + server_url + ", the browser through " + base);
  browser = await chromium.launch({ executablePath: chromium_path, headless: true });
  const context = await browser.newContext({ viewport: { width: 1040, height: 700 }, colorScheme: "light" });
  const page = await context.newPage();
  page.setDefaultTimeout(20000);
  const problems = [];
  // A CSP violation, a script error or a failed request shows up here.
  page.on("console", (m) => { if (m.type() === "error") problems.push("console: " + m.text()); });
  page.on("pageerror", (e) => problems.push("page error: " + e.message));

  // The page itself: served without a key, with its headers.
  const response = await page.goto(base + "/");
  check(response.status() === 200, "GET / to answer 200, got " + response.status());
  const headers = response.headers();
  check(headers["content-type"] === "text/html; charset=utf-8", "an HTML content type, got " + headers["content-type"]);
  check(/script-src 'sha256-/.test(headers["content-security-policy"] || ""), "a CSP with the script's hash");
  check(/connect-src 'self'/.test(headers["content-security-policy"] || ""), "a CSP that allows fetches to the server");
  check(headers["cache-control"] === "no-cache" && /^"[0-9a-f]+"$/.test(headers["etag"] || ""),
        "no-cache with an ETag, got " + headers["cache-control"] + " " + headers["etag"]);
  const again = await page.request.get(base + "/", { headers: { "If-None-Match": headers["etag"] } });
  check(again.status() === 304, "304 for the same ETag, got " + again.status());

  // A wrong key is refused plainly; the right one is kept.
  await page.getByLabel("API key").fill("sk-wrong");
  await page.getByRole("button", { name: "Continue" }).click();
  await page.locator("#key-error").getByText("refused this key").waitFor();
  // Chromium logs the refused request itself; nothing else may be logged.
  check(problems.length === 1 && problems[0].includes("401"), "only the refused request logged, got " + problems);
  problems.length = 0;
  await page.getByLabel("API key").fill(key);
  await page.getByRole("button", { name: "Continue" }).click();
  await page.locator("#agent option[value=calculator]").waitFor({ state: "attached" });
  check((await page.locator("#agent-info").textContent()).includes("calculator"), "the agent's tools to be shown");
  await page.locator("#conversations").getByText("None yet").waitFor();

  // Send, and watch the answer stream.
  await page.evaluate(record_answer_states);
  const question = "What is 12.5 * 8 + 3?";
  await page.getByRole("textbox", { name: "Message", exact: true }).fill(question);
  await page.getByRole("textbox", { name: "Message", exact: true }).press("Enter");
  const answer = page.locator(".message.assistant").last();
  await answer.locator(".meta").waitFor();  // the usage line: message.completed arrived
  const states = await page.evaluate(() => window.__answer_states);
  const before_tool = states.find((s) => s.text === "Let me work that out." && s.tools === 0);
  check(before_tool, "a state with the first deltas shown and no tool call yet, saw " + JSON.stringify(states));
  check(before_tool.busy && before_tool.send_disabled, "the answer marked busy and Send disabled while it streams");
  check(states.some((s) => s.tools === 1 && !s.text.includes("103")), "the tool call shown before the final deltas");
  const tool = answer.locator(".tool");
  check((await tool.locator("summary").textContent()).includes("calculator"), "the tool's name");
  check((await tool.locator(".state").textContent()).trim() === "done", "the tool call finished");
  check((await tool.locator(".result").textContent()).includes("103"), "the calculator's result");
  check((await tool.locator(".arguments").textContent()).includes("12.5 * 8 + 3"), "the tool's arguments");
  const answer_text = (await answer.locator(".text").allTextContents()).join("");
  check(answer_text === "Let me work that out.12.5 × 8 + 3 = 103.", "the streamed answer, got " + answer_text);
  check((await answer.getAttribute("aria-busy")) === null, "the answer no longer busy");
  check(!(await page.locator("#send").isDisabled()), "Send enabled again");
  await page.locator("#conversations button").getByText(question).waitFor();
  check((await page.locator("#conversations .when").first().textContent()).startsWith("calculator · "),
        "the conversation listed with its agent");

  if (screenshot) {
    await tool.locator("summary").click();  // open the tool call, to show its arguments and result
    await page.locator("#messages").evaluate((log) => log.scrollTo(0, log.scrollHeight));
    await page.screenshot({ path: screenshot });
    await tool.locator("summary").click();
    console.log("screenshot: " + screenshot);
  }

  // Reload: the key is remembered, the conversation is listed and (its id
  // is in the address) open again, from the store.
  await page.reload();
  await page.locator("#conversations button[aria-current=true]").getByText(question).waitFor();
  await page.locator(".message.assistant").getByText("= 103.").waitFor();

  // A fresh visit: the list, then open the conversation from it.
  await page.goto(base + "/");
  check((await page.locator("#key-screen").isHidden()), "no key form once the key is kept");
  check((await page.locator("#messages .message").count()) === 0, "a new conversation to start empty");
  await page.locator("#conversations button").getByText(question).click();
  await page.locator("#conversation-title").getByText(question).waitFor();
  await page.locator(".message.user").getByText(question).waitFor();
  await page.locator(".message.assistant").getByText("= 103.").waitFor();
  check((await page.locator("#agent").inputValue()) === "calculator", "the conversation's agent selected");

  // Reloaded mid-answer: the page finds the conversation's turn running and
  // follows its events to the end, the part it had seen included, once.
  await page.getByRole("button", { name: "New conversation" }).click();
  await page.getByLabel("Agent", { exact: true }).selectOption("slow");
  await page.getByRole("textbox", { name: "Message", exact: true }).fill("Take your time: " + question);
  await page.getByRole("textbox", { name: "Message", exact: true }).press("Enter");
  await page.locator(".message.assistant .text").getByText("Let me work that out.").waitFor();
  await page.reload();
  await page.locator(".message.assistant[aria-busy=true]").waitFor();
  await page.locator(".message.assistant .meta").waitFor();
  check((await page.locator(".message.assistant").count()) === 1, "one answer after the reload");
  const resumed = (await page.locator(".message.assistant .text").allTextContents()).join("");
  check(resumed === "Let me work that out.12.5 × 8 + 3 = 103.", "the whole answer after the reload, got " + resumed);
  check((await page.locator(".message.assistant .tool .state").textContent()).trim() === "done", "its tool call");
  check((await page.locator(".message.user").count()) === 1, "its question once");

  // Cut off mid-answer: the page picks the turn up again from the last event
  // it saw, and the answer ends whole.
  await page.getByRole("button", { name: "New conversation" }).click();
  await page.getByLabel("Agent", { exact: true }).selectOption("slow");
  await page.evaluate(record_answer_states);
  await page.getByRole("textbox", { name: "Message", exact: true }).fill("Once more: " + question);
  await page.getByRole("textbox", { name: "Message", exact: true }).press("Enter");
  await page.locator(".message.assistant .text").getByText("Let me work that out.").waitFor();
  relay.cut();
  await page.locator(".message.assistant .meta").waitFor();
  const picked_up = relay.requests.filter((r) => /^GET \/v1\/conversations\/[^/]+\/events\?after=[1-9]\d*&request_id=/.test(r));
  check(picked_up.length === 1, "one request for the rest of the events, got " + JSON.stringify(relay.requests));
  const rejoined = (await page.locator(".message.assistant .text").allTextContents()).join("");
  check(rejoined === "Let me work that out.12.5 × 8 + 3 = 103.", "the whole answer after the break, got " + rejoined);
  check((await page.locator(".message.assistant .tool").count()) === 1, "one tool call after the break");
  check((await page.locator(".message.assistant .error").count()) === 0, "no error after the break");
  // Chromium logs the stream it lost; that one is expected.
  const lost = /net::ERR_(INCOMPLETE_CHUNKED_ENCODING|CONNECTION_CLOSED|CONNECTION_RESET|EMPTY_RESPONSE)/;
  problems.splice(0, problems.length, ...problems.filter((p) => !lost.test(p)));

  // A tool that needs approval: the turn pauses with Approve and Reject on
  // the call; a reload shows them again (from GET …/pending); Approve runs
  // the tool and the answer goes on to its end.
  await page.getByRole("button", { name: "New conversation" }).click();
  await page.getByLabel("Agent", { exact: true }).selectOption("clerk");
  await page.getByRole("textbox", { name: "Message", exact: true }).fill("What is 6 * 7?");
  await page.getByRole("textbox", { name: "Message", exact: true }).press("Enter");
  const approval = page.locator(".message.assistant .approval");
  await approval.getByRole("button", { name: "Approve" }).waitFor();
  check((await approval.locator(".arguments").textContent()).includes("6 * 7"), "the waiting call's arguments");
  check((await page.locator(".message.assistant .error").count()) === 0, "a pause is not shown as a failure");
  check((await page.locator(".message.assistant").last().getAttribute("aria-busy")) === null, "the paused answer not busy");
  await page.reload();
  await approval.getByRole("button", { name: "Approve" }).click();
  const decided = page.locator(".message.assistant").last();
  await decided.locator(".text").getByText("= 42.").waitFor();
  check((await approval.locator(".state").textContent()).includes("approved by web-tester"), "the decision shown");
  check((await approval.getByRole("button").count()) === 0, "no buttons once decided");
  const ran = decided.locator(".tool:not(.approval)");
  check((await ran.locator(".state").textContent()).trim() === "done", "the approved call ran");
  check((await ran.locator(".result").textContent()).includes("42"), "the calculator's result, got " + (await ran.locator(".result").textContent()));
  const approved_answer = (await decided.locator(".text").allTextContents()).join("");
  check(approved_answer === "6 × 7 = 42.", "the final answer after the approval, got " + approved_answer);
  check(!(await page.locator("#send").isDisabled()), "Send enabled after the approved turn");

  // A failed turn is shown in its answer, as the server put it.
  await page.getByRole("button", { name: "New conversation" }).click();
  await page.getByLabel("Agent", { exact: true }).selectOption("failing");
  await page.getByRole("textbox", { name: "Message", exact: true }).fill("Are you there?");
  await page.getByRole("textbox", { name: "Message", exact: true }).press("Enter");
  const error = page.locator(".message.assistant .error");
  await error.waitFor();
  check((await error.textContent()).includes(failure), "the model's error in the answer, got " + (await error.textContent()));
  check((await page.locator(".message.assistant").last().getAttribute("aria-busy")) === null, "the failed answer not busy");
  check(!(await page.locator("#send").isDisabled()), "Send enabled after a failed turn");

  check(problems.length === 0, "no console errors, got:\n" + problems.join("\n"));
}

const guard = setTimeout(() => {
  console.error("FAILED: the test took more than 120 s");
  process.exit(1);
}, 120000);
let failed = false;
try {
  await main();
} catch (e) {
  failed = true;
  console.error("FAILED: " + (e.stack || e.message));
}
if (browser) await browser.close();
const exit = await stop_server();
if (!failed && exit !== 0) {
  failed = true;
  console.error("FAILED: the server ended with " + exit + " after SIGTERM");
}
if (failed) console.error("--- server output ---\n" + server_output);
rmSync(dir, { recursive: true, force: true });
clearTimeout(guard);
console.log(failed ? "chat page test: FAILED" : "chat page test: passed");
process.exit(failed ? 1 : 0);

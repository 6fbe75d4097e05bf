// A small MCP server for troupe's tests: it speaks the modern revision, a
// legacy one, or misbehaves on purpose, as its first argument says.
//
//   node fake_server.mjs MODE [--page-size N] [--bad-schema] [--http] [--sse]
//
// MODE: legacy (2025-11-25; server/discover is an unknown method), modern
// (2026-07-28 only: no initialize, _meta required), downgrade (modern errors
// that list only 2025-06-18, which initialize then picks), silent (never
// answers), garbage (answers every request with a line that is not JSON),
// bad-version (initialize picks 1999-01-01), legacy-2025-03-26 (initialize
// picks 2025-03-26, and a call to "batch" is answered inside a JSON-RPC batch
// with a notification).
// --strict-init (HTTP, legacy): a session takes requests only once its
// notifications/initialized arrived, which the fake takes 300 ms to accept.
// --bad-schema adds tools whose schemas troupe refuses, and a recursive one it takes.
// With --http it serves POST /mcp on 127.0.0.1 at a free port and prints
// "listening PORT" on stdout; else it talks JSON-RPC over stdin/stdout.
// With --hostile (stdio) it offers tools that break the pipes on purpose:
// deafen (it never reads its stdin again, after sending `pings` pings),
// orphan-exit (it exits while a process it started keeps its stdout and/or
// stderr, as `keep` says) and close-stdout (it closes its stdout and lives on).
import * as readline from "node:readline";
import * as http from "node:http";
import * as fs from "node:fs";
import { spawn } from "node:child_process";

const args = process.argv.slice(2);
const mode = args[0] ?? "legacy";
const pageSize = args.includes("--page-size") ? Number(args[args.indexOf("--page-size") + 1]) : 100;
const badSchema = args.includes("--bad-schema");
const overHttp = args.includes("--http");
const sse = args.includes("--sse");
const paramHeaders = args.includes("--param-headers");
const strictInit = args.includes("--strict-init");
const initialized = new Set(); // legacy HTTP sessions whose notifications/initialized arrived
let traceHeader = null; // the traceparent header of the latest HTTP request
const hostile = args.includes("--hostile");
let lines; // stdin, line by line (stdio only)
const MODERN = "2026-07-28";

let cancels = [];
const sessions = new Set(); // legacy HTTP sessions
let deletes = 0;
let discovers = 0; // server/discover requests this process got
let extra = false;
const waiting = new Map(); // slow calls by request id, answered when cancelled or after a minute

const object = (properties, required = []) => ({ type: "object", properties, required });
function tools() {
  const list = [
    { name: "echo", description: "Echoes its text", inputSchema: object({ text: { type: "string" } }, ["text"]) },
    { name: "structured", description: "Returns structured content", inputSchema: object({}) },
    { name: "fail", description: "Always fails", inputSchema: object({}) },
    { name: "slow", description: "Answers only when cancelled", inputSchema: object({}) },
    { name: "crash", description: "Exits while the call runs", inputSchema: object({}) },
    { name: "cancels", description: "The cancellations received", inputSchema: object({}) },
    { name: "change", description: "Adds a tool and says so", inputSchema: object({}) },
    { name: "bad-result", description: "Answers with an unknown resultType", inputSchema: object({}) },
    { name: "image", description: "Answers with text and an image", inputSchema: object({}) },
    { name: "pid", description: "Its process id", inputSchema: object({}) },
    { name: "end-session", description: "Forgets every HTTP session", inputSchema: object({}) },
    { name: "discovers", description: "How many server/discover requests it got", inputSchema: object({}) },
    { name: "deletes", description: "How many sessions were ended with DELETE", inputSchema: object({}) },
    { name: "trace", description: "The trace context the call came with", inputSchema: object({}) },
  ];
  if (extra) list.push({ name: "extra", description: "Added later", inputSchema: object({}) });
  if (mode === "legacy-2025-03-26") list.push({ name: "batch", description: "Answers inside a JSON-RPC batch", inputSchema: object({}) });
  if (paramHeaders) {
    list.push({ name: "weather", description: "Routes on its region", inputSchema: object({ region: { type: "string", "x-mcp-header": "Region" }, days: { type: "integer" } }, ["region"]) });
    list.push({ name: "bad-header", description: "x-mcp-header on a number", inputSchema: object({ n: { type: "number", "x-mcp-header": "N" } }) });
  }
  if (hostile) {
    list.push({ name: "deafen", description: "Stops reading stdin", inputSchema: object({ pings: { type: "integer" } }) });
    list.push({ name: "orphan-exit", description: "Exits, leaving a process on its pipes", inputSchema: object({ keep: { type: "string" } }) });
    list.push({ name: "close-stdout", description: "Closes its stdout and lives on", inputSchema: object({}) });
  }
  if (badSchema) {
    list.push({ name: "number-type", description: "A schema valijson refuses", inputSchema: { type: 12 } });
    list.push({ name: "string-schema", description: "A schema that is not an object", inputSchema: "object" });
    list.push({ name: "self-ref", description: "A schema that is a reference to itself", inputSchema: { $ref: "#" } });
    list.push({ name: "ref-cycle", description: "Two definitions that refer to each other", inputSchema: { type: "object", properties: { x: { $ref: "#/$defs/a" } }, $defs: { a: { $ref: "#/$defs/b" }, b: { $ref: "#/$defs/a" } } } });
    const node = { type: "object", properties: { name: { type: "string" }, children: { type: "array", items: { $ref: "#/$defs/node" } } }, required: ["name"] };
    list.push({ name: "tree", description: "Counts the nodes of a tree", inputSchema: { ...object({ root: { $ref: "#/$defs/node" } }, ["root"]), $defs: { node } } });
  }
  return list;
}

function result(body) {
  return mode === "modern" ? { resultType: "complete", ...body } : body;
}

function callTool(params, id, send, notify) {
  const text = (t) => ({ content: [{ type: "text", text: t }] });
  switch (params.name) {
    case "echo":
      return result(text(`echo: ${params.arguments?.text}`));
    case "structured":
      return result({ ...text('{"answer":42}'), structuredContent: { answer: 42 } });
    case "fail":
      return result({ ...text("it went wrong on purpose"), isError: true });
    case "slow":
      waiting.set(id, send);
      setTimeout(() => waiting.has(id) && send(result(text("slow and done"))), 60_000).unref();
      return undefined;
    case "crash":
      process.stderr.write("boom: crashing on purpose\n");
      process.exit(3);
    case "deafen": {
      lines.pause();
      process.stdin.pause();
      setInterval(() => {}, 60_000); // a paused stdin would let node exit
      for (let i = 0; i < (params.arguments?.pings ?? 0); i++) notify({ jsonrpc: "2.0", id: `ping-${i}`, method: "ping" });
      return result(text("deaf"));
    }
    case "orphan-exit": {
      const keep = params.arguments?.keep ?? "both";
      const out = keep === "stderr" ? "ignore" : "inherit";
      const err = keep === "stdout" ? "ignore" : "inherit";
      const orphan = spawn("sleep", ["300"], { stdio: ["inherit", out, err] });
      process.stderr.write(`boom: leaving ${orphan.pid} behind\n`);
      process.exit(3);
    }
    case "close-stdout":
      fs.closeSync(1);
      return undefined;
    case "cancels":
      return result(text(JSON.stringify(cancels)));
    case "change":
      extra = true;
      notify({ jsonrpc: "2.0", method: "notifications/tools/list_changed" });
      return result(text("changed"));
    case "tree": {
      const count = (n) => 1 + (n.children ?? []).reduce((sum, c) => sum + count(c), 0);
      return result(text(`${count(params.arguments.root)} nodes`));
    }
    case "weather":
      return result(text(`sunny in ${params.arguments?.region}`));
    case "end-session":
      sessions.clear();
      return result(text("forgotten"));
    case "discovers":
      return result(text(String(discovers)));
    case "deletes":
      return result(text(String(deletes)));
    case "pid":
      return result(text(String(process.pid)));
    case "trace":
      return result(text(JSON.stringify({ meta: params._meta?.traceparent ?? null, header: traceHeader })));
    case "bad-result":
      return { resultType: "frobnicate", content: [] };
    case "image":
      return result({ content: [{ type: "text", text: "a picture:" }, { type: "image", mimeType: "image/png", data: "iVBORw0KGgo=" }] });
    default:
      return { error: { code: -32602, message: `unknown tool ${params.name}` } };
  }
}

// Handles one message; `send(result)` answers it, `notify(message)` sends a
// notification. Returns nothing: answers may come later.
function handle(msg, send, sendError, notify) {
  if (msg.method === "notifications/cancelled") {
    cancels.push(msg.params);
    const answer = waiting.get(msg.params?.requestId);
    waiting.delete(msg.params?.requestId);
    if (answer) answer(result({ content: [{ type: "text", text: "cancelled" }] }));
    return;
  }
  if (msg.id === undefined) return; // other notifications
  if (mode === "silent") return;
  if (mode === "garbage") return send(null, "this is not JSON-RPC at all");
  const version = msg.params?._meta?.["io.modelcontextprotocol/protocolVersion"];
  if (msg.method === "server/discover") {
    discovers += 1;
    if (mode === "modern") return send({ supportedVersions: [MODERN], capabilities: { tools: { listChanged: true } }, serverInfo: { name: "fake", version: "1" } });
    if (mode === "downgrade") return sendError(-32022, "Unsupported protocol version", { supported: ["2025-06-18"], requested: version });
    return sendError(-32601, "Method not found");
  }
  if (msg.method === "initialize") {
    if (mode === "modern") return sendError(-32601, "Method not found: this server speaks 2026-07-28 only");
    const chosen =
      mode === "bad-version" ? "1999-01-01"
      : mode === "downgrade" ? "2025-06-18"
      : mode === "legacy-2025-03-26" ? "2025-03-26"
      : msg.params.protocolVersion;
    return send({ protocolVersion: chosen, capabilities: { tools: { listChanged: true } }, serverInfo: { name: "fake", version: "1" } });
  }
  if (mode === "modern" && version !== MODERN)
    return sendError(-32022, "Unsupported protocol version", { supported: [MODERN], requested: version ?? null });
  if (msg.method === "tools/list") {
    const all = tools();
    const start = msg.params?.cursor ? Number(msg.params.cursor) : 0;
    const page = all.slice(start, start + pageSize);
    const next = start + pageSize < all.length ? { nextCursor: String(start + pageSize) } : {};
    return send(result({ tools: page, ...next }));
  }
  if (msg.method === "tools/call" && msg.params?.name === "batch" && mode === "legacy-2025-03-26") {
    // 2025-03-26's JSON-RPC batch: a notification and the answer as one array.
    const batch = [
      { jsonrpc: "2.0", method: "notifications/message", params: { level: "info", data: "batched" } },
      { jsonrpc: "2.0", id: msg.id, result: { content: [{ type: "text", text: "answered in a batch" }] } },
    ];
    return send(null, JSON.stringify(batch));
  }
  if (msg.method === "tools/call") {
    const r = callTool(msg.params, msg.id, send, notify);
    if (r === undefined) return;
    if (r.error) return sendError(r.error.code, r.error.message);
    return send(r);
  }
  return sendError(-32601, `Method not found: ${msg.method}`);
}

if (!overHttp) {
  const out = (m) => process.stdout.write((typeof m === "string" ? m : JSON.stringify(m)) + "\n");
  lines = readline.createInterface({ input: process.stdin });
  lines.on("line", (line) => {
    let msg;
    try {
      msg = JSON.parse(line);
    } catch {
      return;
    }
    handle(
      msg,
      (r, raw) => out(raw ?? { jsonrpc: "2.0", id: msg.id, result: r }),
      (code, message, data) => out({ jsonrpc: "2.0", id: msg.id, error: { code, message, ...(data ? { data } : {}) } }),
      out,
    );
  });
  lines.on("close", () => process.exit(0));
} else {
  const server = http.createServer((req, res) => {
    if (req.method === "DELETE") {
      deletes += 1;
      sessions.delete(req.headers["mcp-session-id"]);
      res.writeHead(200).end();
      return;
    }
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      let msg;
      try {
        msg = JSON.parse(body);
      } catch {
        res.writeHead(400).end();
        return;
      }
      traceHeader = req.headers["traceparent"] ?? null;
      if (msg.id === undefined) {
        handle(msg, () => {}, () => {}, () => {});
        if (strictInit && msg.method === "notifications/initialized") {
          setTimeout(() => {
            initialized.add(req.headers["mcp-session-id"]);
            res.writeHead(202).end();
          }, 300);
          return;
        }
        res.writeHead(202).end();
        return;
      }
      if (strictInit && msg.method !== "initialize" && msg.method !== "server/discover" && !initialized.has(req.headers["mcp-session-id"])) {
        res.writeHead(400, { "content-type": "application/json" });
        res.end(JSON.stringify({ jsonrpc: "2.0", id: msg.id, error: { code: -32600, message: "the session is not initialized yet" } }));
        return;
      }
      // The modern binding: the header must match the body's _meta.
      const header = req.headers["mcp-protocol-version"];
      const version = msg.params?._meta?.["io.modelcontextprotocol/protocolVersion"];
      if (mode === "modern" && version && header !== version) {
        res.writeHead(400, { "content-type": "application/json" });
        res.end(JSON.stringify({ jsonrpc: "2.0", id: msg.id, error: { code: -32020, message: "Header mismatch" } }));
        return;
      }
      if (mode === "modern" && req.headers["mcp-method"] !== msg.method) {
        res.writeHead(400, { "content-type": "application/json" });
        res.end(JSON.stringify({ jsonrpc: "2.0", id: msg.id, error: { code: -32020, message: "Mcp-Method mismatch" } }));
        return;
      }
      // x-mcp-header: the mirrored parameter must match the body.
      if (msg.method === "tools/call" && msg.params?.name === "weather" && req.headers["mcp-param-region"] !== msg.params?.arguments?.region) {
        res.writeHead(400, { "content-type": "application/json" });
        res.end(JSON.stringify({ jsonrpc: "2.0", id: msg.id, error: { code: -32020, message: `Mcp-Param-Region is ${req.headers["mcp-param-region"]}` } }));
        return;
      }
      // Legacy sessions: initialize opens one; any other request must name a live one.
      let sessionHeader = {};
      const legacy = mode === "legacy" || mode === "legacy-2025-03-26";
      if (legacy && msg.method === "initialize") {
        const id = `session-${Math.random().toString(16).slice(2)}`;
        sessions.add(id);
        sessionHeader = { "mcp-session-id": id };
      } else if (legacy && msg.method !== "server/discover" && !sessions.has(req.headers["mcp-session-id"])) {
        res.writeHead(req.headers["mcp-session-id"] ? 404 : 400, { "content-type": "application/json" });
        res.end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32000, message: "no such session" } }));
        return;
      }
      const notes = [];
      const answer = (m, status = 200) => {
        if (sse) {
          res.writeHead(status, { "content-type": "text/event-stream", ...sessionHeader });
          for (const n of notes) res.write(`event: message\ndata: ${JSON.stringify(n)}\n\n`);
          res.end(`data: ${JSON.stringify(m)}\n\n`);
        } else {
          res.writeHead(status, { "content-type": "application/json", ...sessionHeader });
          res.end(JSON.stringify(m));
        }
      };
      handle(
        msg,
        (r, raw) => (raw ? (res.writeHead(200, { "content-type": "application/json" }), res.end(raw)) : answer({ jsonrpc: "2.0", id: msg.id, result: r })),
        (code, message, data) =>
          answer({ jsonrpc: "2.0", id: msg.id, error: { code, message, ...(data ? { data } : {}) } }, code === -32022 ? 400 : 200),
        (n) => notes.push(n),
      );
    });
  });
  server.listen(0, "127.0.0.1", () => process.stdout.write(`listening ${server.address().port}\n`));
  process.stdin.on("end", () => process.exit(0));
  process.stdin.resume();
}

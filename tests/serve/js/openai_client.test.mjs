// troupe serve's POST /v1/chat/completions driven by the official `openai`
// npm client, streaming and not. Usage:
//   node openai_client.test.mjs TROUPE_BINARY
// Starts `troupe serve` on a free port of 127.0.0.1 with a scripted agent,
// runs the cases in order and exits 0 when every one passed. Exit 77 (ctest
// SKIP_RETURN_CODE) when the openai package is not installed.

import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import assert from 'node:assert/strict';

let OpenAI;
try {
  ({ default: OpenAI } = await import('openai'));
} catch {
  console.log('troupe-skip: the openai package is not installed (npm ci --prefix tests/serve/js)');
  process.exit(77);
}

const troupe = process.argv[2];
if (!troupe) {
  console.error('usage: node openai_client.test.mjs TROUPE_BINARY');
  process.exit(2);
}

const KEY = 'test-key-0123456789abcdef';
const METRICS_KEY = 'test-metrics-key-0123456789';
const dir = mkdtempSync(path.join(os.tmpdir(), 'troupe-openai-'));

// Each model call takes the next reply, across the whole run: the cases
// below consume them in order.
const script = [
  { chunks: ['Hel', 'lo', ' there'], usage: { input_tokens: 11, output_tokens: 3 } },  // non-streaming
  { chunks: ['One', ', two', ', three'], usage: { input_tokens: 13, output_tokens: 4 } },  // streaming
  { chunks: ['no usage asked'], usage: { input_tokens: 5, output_tokens: 3 } },  // streaming without include_usage
  { text: 'Remembered.', usage: { input_tokens: 20, output_tokens: 1 } },  // stored conversation, turn 1
  { text: 'Still here.', usage: { input_tokens: 30, output_tokens: 2 } },  // stored conversation, turn 2
  { error: { type: 'overloaded', message: 'the scripted model is overloaded' } },  // a failing model, streaming
];
writeFileSync(path.join(dir, 'script.json'), JSON.stringify(script));
writeFileSync(path.join(dir, 'serve.toml'), `
store = "sqlite:${path.join(dir, 'troupe.db')}"

[[agents]]
id = "helper"
provider = "scripted"
script = "${path.join(dir, 'script.json')}"
retries = 0

[[keys]]
key = "${KEY}"
user = "ann"

[[keys]]
key = "${METRICS_KEY}"
user = "prometheus"
role = "metrics"
`);

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function waitHealthy(base, server) {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (server.exitCode !== null) throw new Error(`troupe serve exited with ${server.exitCode}`);
    try {
      const r = await fetch(`${base}/healthz`);
      if (r.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('troupe serve did not answer /healthz within 30 s');
}

const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const server = spawn(troupe, ['serve', '--config', path.join(dir, 'serve.toml'), '--listen', `127.0.0.1:${port}`], {
  stdio: ['ignore', 'inherit', 'inherit'],
});

const client = new OpenAI({ apiKey: KEY, baseURL: `${base}/v1`, maxRetries: 0, timeout: 20_000 });
let failed = 0;
async function check(name, body) {
  try {
    await body();
    console.log(`ok - ${name}`);
  } catch (e) {
    failed++;
    console.log(`not ok - ${name}\n${e.stack ?? e}`);
  }
}

try {
  await waitHealthy(base, server);

  await check('a non-streaming completion carries the answer and the usage', async () => {
    const c = await client.chat.completions.create({
      model: 'helper',
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: 'Say hello' },
      ],
    });
    assert.equal(c.object, 'chat.completion');
    assert.equal(c.model, 'helper');
    assert.match(c.id, /^chatcmpl-/);
    assert.equal(c.choices.length, 1);
    assert.equal(c.choices[0].message.role, 'assistant');
    assert.equal(c.choices[0].message.content, 'Hello there');
    assert.equal(c.choices[0].finish_reason, 'stop');
    assert.deepEqual(c.usage, { prompt_tokens: 11, completion_tokens: 3, total_tokens: 14 });
  });

  await check('a streamed completion arrives in chunks, usage last (include_usage)', async () => {
    const stream = await client.chat.completions.create({
      model: 'helper',
      messages: [
        { role: 'user', content: 'Count' },
        { role: 'assistant', content: 'To what?' },
        { role: 'user', content: 'To three' },
      ],
      stream: true,
      stream_options: { include_usage: true },
    });
    const pieces = [];
    let finish = null;
    let usage = null;
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      assert.equal(chunk.object, 'chat.completion.chunk');
      if (chunk.usage) usage = chunk.usage;
      for (const choice of chunk.choices) {
        if (choice.delta.content) pieces.push(choice.delta.content);
        if (choice.finish_reason) finish = choice.finish_reason;
      }
    }
    assert.equal(pieces.join(''), 'One, two, three');
    assert.ok(pieces.length >= 3, `the answer came in ${pieces.length} pieces, not streamed`);
    assert.equal(finish, 'stop');
    assert.deepEqual(usage, { prompt_tokens: 13, completion_tokens: 4, total_tokens: 17 });
    assert.ok(chunks >= 5, `${chunks} chunks`);
  });

  await check('without include_usage no chunk carries usage', async () => {
    const stream = await client.chat.completions.create({
      model: 'helper',
      messages: [{ role: 'user', content: 'Hi' }],
      stream: true,
    });
    let text = '';
    for await (const chunk of stream) {
      assert.ok(!chunk.usage, 'a chunk carried usage');
      for (const choice of chunk.choices) text += choice.delta.content ?? '';
    }
    assert.equal(text, 'no usage asked');
  });

  await check('with user and X-Troupe-Conversation, turns continue a stored conversation', async () => {
    const opts = { headers: { 'X-Troupe-Conversation': 'chat-42' } };
    const first = await client.chat.completions.create(
      { model: 'helper', user: 'end-user-7', messages: [{ role: 'user', content: 'Remember 7' }] },
      opts,
    );
    assert.equal(first.choices[0].message.content, 'Remembered.');
    const second = await client.chat.completions.create(
      { model: 'helper', user: 'end-user-7', messages: [{ role: 'user', content: 'What was it?' }] },
      opts,
    );
    assert.equal(second.choices[0].message.content, 'Still here.');
    // The conversation is the caller's, listed with both turns.
    const list = await (await fetch(`${base}/v1/conversations`, { headers: { Authorization: `Bearer ${KEY}` } })).json();
    const conv = list.data.find((c) => c.platform === 'openai');
    assert.ok(conv, `no openai conversation in ${JSON.stringify(list)}`);
    const got = await (
      await fetch(`${base}/v1/conversations/${conv.id}?messages=10`, { headers: { Authorization: `Bearer ${KEY}` } })
    ).json();
    assert.deepEqual(
      got.messages.map((m) => [m.role, m.content]),
      [
        ['user', 'Remember 7'],
        ['assistant', 'Remembered.'],
        ['user', 'What was it?'],
        ['assistant', 'Still here.'],
      ],
    );
  });

  await check('stateless completions store no conversation', async () => {
    const list = await (await fetch(`${base}/v1/conversations`, { headers: { Authorization: `Bearer ${KEY}` } })).json();
    assert.equal(list.data.length, 1, JSON.stringify(list));
  });

  await check("a model's failure mid-stream reaches the client as an error", async () => {
    const stream = await client.chat.completions.create({
      model: 'helper',
      messages: [{ role: 'user', content: 'Fail' }],
      stream: true,
    });
    await assert.rejects(
      async () => {
        for await (const chunk of stream) void chunk;
      },
      (e) => {
        assert.match(String(e.message), /overloaded/);
        return true;
      },
    );
  });

  await check('an unknown model is a 404 naming it', async () => {
    await assert.rejects(
      client.chat.completions.create({ model: 'nobody', messages: [{ role: 'user', content: 'x' }] }),
      (e) => {
        assert.ok(e instanceof OpenAI.NotFoundError, `${e.constructor.name}: ${e.message}`);
        assert.equal(e.status, 404);
        assert.equal(e.param, 'model');
        assert.match(e.message, /nobody/);
        return true;
      },
    );
  });

  await check('bad messages are a 400 naming the field', async () => {
    await assert.rejects(
      client.chat.completions.create({ model: 'helper', messages: [{ role: 'robot', content: 'x' }] }),
      (e) => {
        assert.ok(e instanceof OpenAI.BadRequestError, `${e.constructor.name}: ${e.message}`);
        assert.equal(e.type, 'invalid_request_error');
        assert.equal(e.param, 'messages');
        assert.match(e.message, /messages\[0\]\.role/);
        return true;
      },
    );
  });

  await check('a wrong key is a 401', async () => {
    const stranger = new OpenAI({ apiKey: 'not-a-key-at-all-000000', baseURL: `${base}/v1`, maxRetries: 0 });
    await assert.rejects(
      stranger.chat.completions.create({ model: 'helper', messages: [{ role: 'user', content: 'x' }] }),
      (e) => e instanceof OpenAI.AuthenticationError,
    );
  });

  await check('GET /metrics counts the completions, in the Prometheus text format', async () => {
    const r = await fetch(`${base}/metrics`, { headers: { Authorization: `Bearer ${METRICS_KEY}` } });
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type'), /^text\/plain; version=0\.0\.4/);
    const text = await r.text();
    assert.match(text, /# TYPE troupe_turn_duration_seconds histogram/);
    // Six answered 200: the stream that failed had begun before its model failed.
    assert.match(text, /troupe_http_requests_total\{route="\/v1\/chat\/completions",method="POST",status="200"\} 6\n/);
    assert.match(text, /troupe_http_requests_total\{route="\/v1\/chat\/completions",method="POST",status="400"\} 1\n/);
    assert.match(text, /troupe_tokens_total\{agent="helper",direction="input"\} 79\n/);
    assert.match(text, /troupe_turns_total\{agent="helper",outcome="ok"\} 5\n/);
    assert.match(text, /troupe_turns_total\{agent="helper",outcome="error"\} 1\n/);
    assert.match(text, /troupe_active_streams 0\n/);
  });
} finally {
  server.kill('SIGTERM');
  await new Promise((r) => (server.exitCode !== null ? r() : server.once('exit', r)));
  rmSync(dir, { recursive: true, force: true });
}

if (server.exitCode !== 0 && server.signalCode === null && failed === 0) {
  console.log(`not ok - troupe serve exited with ${server.exitCode} after SIGTERM`);
  failed++;
}
console.log(failed ? `${failed} failed` : 'all passed');
process.exit(failed ? 1 : 0);

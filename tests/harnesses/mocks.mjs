// Local stand-ins for the three model APIs the harness CLIs call: Anthropic's Messages API
// (Claude Code), OpenAI's Responses API (Codex) and the Gemini API (Gemini CLI), each
// streaming the way its CLI asks. A mock plays scripted steps: each request of the agent's
// loop (one that offers the step's tool) gets the next tool call; the request after a call
// carries the tool's result, which the mock keeps (what the model was shown); after the last
// step the model answers with a final text. Every other request (titles, routing, token
// counts) gets a short plain answer.
import http from "node:http";

/// Scripted steps `[{tool, input}]`: `tool` is the name of the tool the model calls, `input`
/// its arguments (an object; a string for a free-form tool such as Codex's apply_patch).
export class Script {
  constructor(steps) {
    this.steps = steps;
    this.next = 0;
    this.results = [];
    this.requests = [];
    this.bodies = [];
  }
  get called() {
    return this.next > 0;
  }
  /// The next step when the request offers its tool (and moves on), else null.
  take(offered) {
    const step = this.steps[this.next];
    if (!step || !offered(step.tool)) return null;
    this.next += 1;
    return step;
  }
}

function sse(res, events) {
  res.writeHead(200, {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    connection: "keep-alive",
  });
  for (const [event, data] of events) {
    if (event) res.write(`event: ${event}\n`);
    res.write(`data: ${JSON.stringify(data)}\n\n`);
  }
  res.end();
}

function readBody(req) {
  return new Promise((resolve) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      try {
        resolve(JSON.parse(text));
      } catch {
        resolve({ raw: text });
      }
    });
  });
}

/// Text of any content shape (strings, lists of blocks, nested content).
export function flatten(value) {
  if (value == null) return "";
  if (typeof value === "string") return value;
  if (Array.isArray(value)) return value.map(flatten).join("\n");
  if (typeof value === "object") {
    return Object.values(value).map(flatten).join("\n");
  }
  return String(value);
}

// ---- Anthropic Messages API (Claude Code) -------------------------------------------------

function anthropic(script, body, res) {
  const step = script.take((tool) => (body.tools || []).some((t) => t.name === tool));
  const messages = body.messages || [];
  // The last message holding a tool's result, and every message after it: what a hook added
  // beside the result (Claude Code 2.1.332 sends hook context as a `system` message after it).
  const hasResult = (m) => Array.isArray(m?.content) && m.content.some((b) => b.type === "tool_result");
  let at = messages.length - 1;
  while (at >= 0 && !hasResult(messages[at]) && messages[at].role !== "assistant") at -= 1;
  if (at >= 0 && hasResult(messages[at]) && script.called) {
    script.results.push(flatten(messages.slice(at).map((m) => m.content)));
  }
  const id = `msg_${Math.random().toString(36).slice(2)}`;
  const model = body.model || "claude-sonnet-4-5";
  const usage = { input_tokens: 10, output_tokens: 1 };
  const start = ["message_start", {
    type: "message_start",
    message: { id, type: "message", role: "assistant", model, content: [], stop_reason: null, stop_sequence: null, usage },
  }];
  const end = (stop) => [
    ["message_delta", { type: "message_delta", delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 5 } }],
    ["message_stop", { type: "message_stop" }],
  ];
  const text = (t) => [
    ["content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }],
    ["content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: t } }],
    ["content_block_stop", { type: "content_block_stop", index: 0 }],
  ];
  if (step) {
    const toolId = `toolu_${Math.random().toString(36).slice(2)}`;
    const events = [
      start,
      ["content_block_start", { type: "content_block_start", index: 0, content_block: { type: "tool_use", id: toolId, name: step.tool, input: {} } }],
      ["content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: JSON.stringify(step.input) } }],
      ["content_block_stop", { type: "content_block_stop", index: 0 }],
      ...end("tool_use"),
    ];
    if (body.stream) return sse(res, events);
    return json(res, { id, type: "message", role: "assistant", model, content: [{ type: "tool_use", id: toolId, name: step.tool, input: step.input }], stop_reason: "tool_use", usage });
  }
  if (body.stream) return sse(res, [start, ...text("done"), ...end("end_turn")]);
  return json(res, { id, type: "message", role: "assistant", model, content: [{ type: "text", text: "done" }], stop_reason: "end_turn", usage });
}

// ---- OpenAI Responses API (Codex) ----------------------------------------------------------

function openai(script, body, res) {
  const tools = body.tools || [];
  const find = (tool) => tools.find((t) => (t.name || t.function?.name || t.type) === tool);
  const step = script.take((tool) => find(tool) !== undefined);
  const input = Array.isArray(body.input) ? body.input : [];
  const outputs = input.filter((i) => /_(call_)?output$/.test(i.type || ""));
  if (outputs.length > 0 && script.called) {
    // From the last call on: its output and what hooks added beside it (developer messages).
    const calls = input.filter((i) => /_call$/.test(i.type || ""));
    const after = input.slice(input.indexOf(calls[calls.length - 1]) + 1);
    script.results.push(flatten(after.map((i) => i.output ?? i.content)));
  }
  const id = `resp_${Math.random().toString(36).slice(2)}`;
  const base = { id, object: "response", created_at: Math.floor(Date.now() / 1000), model: body.model || "gpt-5", status: "in_progress", output: [] };
  const usage = { input_tokens: 10, input_tokens_details: { cached_tokens: 0 }, output_tokens: 5, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 15 };
  let item;
  if (step) {
    const offered = find(step.tool);
    const callId = `call_${Math.random().toString(36).slice(2)}`;
    item = offered.type === "tool_search"
      ? { type: "tool_search_call", id: `tsc_${callId}`, call_id: callId, execution: "client", arguments: step.input, status: "completed" }
      : offered.type === "custom"
      ? { type: "custom_tool_call", id: `ctc_${callId}`, call_id: callId, name: step.tool, input: typeof step.input === "string" ? step.input : JSON.stringify(step.input), status: "completed" }
      : { type: "function_call", id: `fc_${callId}`, call_id: callId, name: step.tool, arguments: typeof step.input === "string" ? JSON.stringify({ input: step.input }) : JSON.stringify(step.input), status: "completed" };
  } else {
    item = { type: "message", id: `msg_${id}`, role: "assistant", status: "completed", content: [{ type: "output_text", text: "done", annotations: [] }] };
  }
  sse(res, [
    ["response.created", { type: "response.created", sequence_number: 0, response: base }],
    ["response.output_item.added", { type: "response.output_item.added", sequence_number: 1, output_index: 0, item }],
    ["response.output_item.done", { type: "response.output_item.done", sequence_number: 2, output_index: 0, item }],
    ["response.completed", { type: "response.completed", sequence_number: 3, response: { ...base, status: "completed", output: [item], usage } }],
  ]);
}

// ---- OpenAI Chat Completions API (OpenCode's OpenAI-compatible custom provider) ------------

function chat(script, body, res) {
  const tools = body.tools || [];
  const step = script.take((tool) => tools.some((t) => t.function?.name === tool));
  const messages = body.messages || [];
  // The last tool result and everything after it (what a plugin appended is in its content).
  let at = messages.length - 1;
  while (at >= 0 && messages[at].role !== "tool" && messages[at].role !== "assistant") at -= 1;
  if (at >= 0 && messages[at].role === "tool" && script.called) {
    script.results.push(flatten(messages.slice(at).map((m) => m.content)));
  }
  const id = `chatcmpl-${Math.random().toString(36).slice(2)}`;
  const created = Math.floor(Date.now() / 1000);
  const model = body.model || "mock";
  const chunk = (delta, finish) => [null, { id, object: "chat.completion.chunk", created, model, choices: [{ index: 0, delta, finish_reason: finish }] }];
  const usage = [null, { id, object: "chat.completion.chunk", created, model, choices: [], usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } }];
  const events = step
    ? [
      chunk({ role: "assistant", content: null, tool_calls: [{ index: 0, id: `call_${Math.random().toString(36).slice(2)}`, type: "function", function: { name: step.tool, arguments: "" } }] }, null),
      chunk({ tool_calls: [{ index: 0, function: { arguments: JSON.stringify(step.input) } }] }, null),
      chunk({}, "tool_calls"),
    ]
    : [chunk({ role: "assistant", content: "done" }, null), chunk({}, "stop")];
  if (!body.stream) {
    const message = step
      ? { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: step.tool, arguments: JSON.stringify(step.input) } }] }
      : { role: "assistant", content: "done" };
    return json(res, { id, object: "chat.completion", created, model, choices: [{ index: 0, message, finish_reason: step ? "tool_calls" : "stop" }], usage: usage[1].usage });
  }
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
  for (const [, data] of [...events, usage]) res.write(`data: ${JSON.stringify(data)}\n\n`);
  res.end("data: [DONE]\n\n");
}

// ---- Gemini API (Gemini CLI) ---------------------------------------------------------------

function gemini(script, body, url, res) {
  const declarations = (body.tools || []).flatMap((t) => t.functionDeclarations || []);
  const step = script.take((tool) => declarations.some((d) => d.name === tool));
  const contents = body.contents || [];
  const last = contents[contents.length - 1];
  const responses = (last?.parts || []).filter((p) => p.functionResponse);
  if (responses.length > 0 && script.called) {
    script.results.push(flatten(last.parts));
  }
  let parts;
  if (step) {
    parts = [{ functionCall: { name: step.tool, args: step.input } }];
  } else if (body.generationConfig?.responseMimeType === "application/json") {
    // Side requests (routing, next speaker, ...) that want JSON.
    parts = [{ text: JSON.stringify({ reasoning: "mock", model_choice: "flash", next_speaker: "user", complexity_reasoning: "mock", complexity_score: 1 }) }];
  } else {
    parts = [{ text: "done" }];
  }
  const chunk = {
    candidates: [{ content: { role: "model", parts }, finishReason: "STOP", index: 0 }],
    usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 },
    modelVersion: "gemini-2.5-pro",
  };
  if (url.includes("streamGenerateContent")) return sse(res, [[null, chunk]]);
  if (url.includes("countTokens")) return json(res, { totalTokens: 10 });
  return json(res, chunk);
}

function json(res, value) {
  res.writeHead(200, { "content-type": "application/json" });
  res.end(JSON.stringify(value));
}

/// Starts the mock for `api` ("anthropic" | "openai" | "chat" | "gemini") on 127.0.0.1; resolves to
/// `{url, close}`.
export function startMock(api, script) {
  const server = http.createServer(async (req, res) => {
    const body = req.method === "POST" ? await readBody(req) : {};
    script.requests.push({ method: req.method, url: req.url });
    script.bodies.push(body);
    try {
      if (req.method !== "POST") return json(res, {});
      if (api === "anthropic") {
        if (req.url.includes("count_tokens")) return json(res, { input_tokens: 10 });
        return anthropic(script, body, res);
      }
      if (api === "openai") return openai(script, body, res);
      if (api === "chat") return chat(script, body, res);
      return gemini(script, body, req.url, res);
    } catch (error) {
      res.writeHead(500);
      res.end(String(error));
    }
  });
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      resolve({ url: `http://127.0.0.1:${port}`, close: () => server.close() });
    });
  });
}

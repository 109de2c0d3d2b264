// The harness compatibility suite: the real Claude Code, Codex and Gemini CLI (pinned in
// package.json / package-lock.json beside this file) driven non-interactively against local
// mocks of their model APIs (mocks.mjs), each in a throwaway HOME, in a git repository set up
// with `wit init --agent claude,codex,gemini`. Per CLI: wit's MCP tools are offered to the
// model, and three scripted edits: a function
// another session has locked (the file must stay as it was, and the model must be shown
// wit's reason), a free function (the edit lands), and a function inside another session's
// declared intent (the edit lands, and the model is shown the overlap).
//
// Usage: node suite.mjs <node_modules/.bin dir> <wit binary> [claude|codex|gemini ...]
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Script, startMock } from "./mocks.mjs";

const [binDir, witArg, ...only] = process.argv.slice(2);
if (!binDir || !witArg) {
  console.error("usage: node suite.mjs <node_modules/.bin> <wit binary> [cli ...]");
  process.exit(2);
}
const wit = path.resolve(witArg);
const keep = process.env.WIT_HARNESS_KEEP === "1";

const AUTH_TS = `export function validateToken(token: string): boolean {
  return token.length > 3;
}

export function formatName(name: string): string {
  return name.trim();
}

export function auditLog(event: string): string {
  return "audit: " + event;
}
`;

/// The edits: the text replaced, its replacement, whether it lands, what the model is shown.
const CASES = [
  { name: "locked", old: "  return token.length > 3;", new: "  return token.length > 8;", lands: false, shown: "is locked by" },
  { name: "free", old: "  return name.trim();", new: "  return name.trim().toLowerCase();", lands: true, shown: null },
  { name: "intent", old: '  return "audit: " + event;', new: '  return "audit(v2): " + event;', lands: true, shown: "overlaps intent" },
  // Text that occurs in every function, replaced everywhere (Claude's replace_all, Gemini's
  // allow_multiple): the locked function is among the occurrences.
  { name: "every-occurrence", old: "string", new: "String", all: true, lands: false, shown: "is locked by", only: ["claude", "gemini", "opencode"] },
  // `git stash` while another session's uncommitted edit of formatName is in the tree: refused
  // with wit's reason, the edit stays where it is and nothing is stashed. Claude Code runs it
  // as a skill's inline `!` command (PreSkillShellCommand: PreToolUse never sees it), OpenCode
  // through its `bash` tool.
  { name: "stash", stash: true, shown: "throw away", only: ["claude", "opencode"] },
];

/// The other session's uncommitted edit the stash case must not take.
const BOBS_EDIT = { old: "  return name.trim();", new: "  return name.trim().toUpperCase();" };

function run(cmd, args, opts = {}) {
  const out = spawnSync(cmd, args, { encoding: "utf8", ...opts });
  if (out.status !== 0) {
    throw new Error(`${cmd} ${args.join(" ")} failed (${out.status}): ${out.stdout}\n${out.stderr}`);
  }
  return out.stdout;
}

/// A git repository with src/auth.ts committed and wit wired for the three CLIs.
function setupRepo(dir, home) {
  const repo = path.join(dir, "repo");
  fs.mkdirSync(path.join(repo, "src"), { recursive: true });
  fs.writeFileSync(path.join(repo, "src/auth.ts"), AUTH_TS);
  const env = { ...witEnv(home), GIT_AUTHOR_NAME: "t", GIT_AUTHOR_EMAIL: "t@example.com", GIT_COMMITTER_NAME: "t", GIT_COMMITTER_EMAIL: "t@example.com" };
  run("git", ["init", "-q"], { cwd: repo, env });
  run("git", ["add", "."], { cwd: repo, env });
  run("git", ["commit", "-q", "-m", "init"], { cwd: repo, env });
  run(wit, ["init", "--no-docs", "--agent", "claude,codex,gemini,opencode"], { cwd: repo, env });
  return repo;
}

function witEnv(home) {
  const env = { ...process.env, HOME: home };
  for (const key of ["WIT_SESSION", "CLAUDE_SESSION_ID", "WIT_REPO_ROOT", "WIT_NO_AUTOSTART"]) delete env[key];
  // A loaded CI machine must not turn a verdict into fail-open.
  env.WIT_GATE_TIMEOUT_MS = "20000";
  return env;
}

/// Another session's lock on validateToken and intent on auditLog, fresh before each run.
function othersWork(repo, home, c) {
  const env = witEnv(home);
  if (c.stash) {
    // bob's edit through the edit gate (which records it as his), then on disk.
    const file = path.join(repo, "src/auth.ts");
    run(wit, ["register", "bob"], { cwd: repo, env: { ...env, WIT_SESSION: "bob" } });
    const payload = JSON.stringify({ session_id: "bob", cwd: repo, hook_event_name: "PreToolUse", tool_name: "Edit", tool_input: { file_path: file, old_string: BOBS_EDIT.old, new_string: BOBS_EDIT.new } });
    run(wit, ["hook", "pre-edit", "--agent", "claude"], { cwd: repo, env, input: payload });
    fs.writeFileSync(file, fs.readFileSync(file, "utf8").replace(BOBS_EDIT.old, BOBS_EDIT.new));
    return;
  }
  run(wit, ["lock", "src/auth.ts:validateToken", "--ttl", "30m"], { cwd: repo, env: { ...env, WIT_SESSION: "holder" } });
  const intents = JSON.parse(run(wit, ["--json", "intent", "list"], { cwd: repo, env: { ...env, WIT_SESSION: "planner" } }) || "[]");
  const open = (Array.isArray(intents) ? intents : intents.intents || []).some((i) => (i.description || "").includes("Audit log rework"));
  if (!open) {
    run(wit, ["declare", "-d", "Audit log rework", "-f", "src/auth.ts", "-s", "auditLog"], { cwd: repo, env: { ...env, WIT_SESSION: "planner" } });
  }
}

function spawnLogged(cmd, args, opts, logFile, timeoutMs = 180_000) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { ...opts, stdio: ["ignore", "pipe", "pipe"] });
    const log = fs.createWriteStream(logFile);
    child.stdout.pipe(log, { end: false });
    child.stderr.pipe(log, { end: false });
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      log.end();
      resolve({ code, signal });
    });
  });
}

/// Trusts the project's hooks the way Codex's `/hooks` screen does: through its app-server,
/// `hooks/list` for each hook's key and current hash, then `config/value/write` of
/// `hooks.state."<key>".trusted_hash`.
async function trustCodexHooks(codex, repo, env) {
  const child = spawn(codex, ["app-server"], { cwd: repo, env, stdio: ["pipe", "pipe", "ignore"] });
  const pending = new Map();
  let buffer = "";
  child.stdout.on("data", (data) => {
    buffer += data;
    let end;
    while ((end = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, end);
      buffer = buffer.slice(end + 1);
      let message;
      try {
        message = JSON.parse(line);
      } catch {
        continue;
      }
      if (message.id !== undefined && pending.has(message.id)) {
        pending.get(message.id)(message);
        pending.delete(message.id);
      }
    }
  });
  let next = 0;
  const call = (method, params) => new Promise((resolve, reject) => {
    const id = ++next;
    const timer = setTimeout(() => reject(new Error(`codex app-server: no answer to ${method}`)), 30_000);
    pending.set(id, (message) => {
      clearTimeout(timer);
      if (message.error) reject(new Error(`codex app-server ${method}: ${JSON.stringify(message.error)}`));
      else resolve(message.result);
    });
    child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
  });
  try {
    await call("initialize", { clientInfo: { name: "wit-harness-suite", version: "1" } });
    child.stdin.write(JSON.stringify({ jsonrpc: "2.0", method: "initialized" }) + "\n");
    const listed = await call("hooks/list", { cwds: [repo] });
    const hooks = listed.data.flatMap((entry) => entry.hooks);
    if (!hooks.some((hook) => (hook.command || "").includes("hook pre-edit"))) {
      throw new Error(`codex lists no wit hook: ${JSON.stringify(listed)}`);
    }
    for (const hook of hooks) {
      await call("config/value/write", { keyPath: `hooks.state."${hook.key}".trusted_hash`, value: hook.currentHash, mergeStrategy: "replace" });
    }
  } finally {
    child.kill();
  }
}

// ---- the three CLIs ------------------------------------------------------------------------

const CLIS = {
  claude: {
    api: "anthropic",
    mcpTool: "mcp__wit__lock_acquire",
    prepare(repo, home) {
      // Approves the project's .mcp.json server (else Claude Code would ask).
      fs.writeFileSync(path.join(repo, ".claude/settings.local.json"), JSON.stringify({ enabledMcpjsonServers: ["wit"] }));
      // A skill whose inline `!` command stashes (Claude Code's own permission allows it).
      const skill = path.join(repo, ".claude/skills/wip");
      fs.mkdirSync(skill, { recursive: true });
      fs.writeFileSync(path.join(skill, "SKILL.md"), "---\nname: wip\ndescription: Put the work in progress aside\nallowed-tools: Bash(git stash:*)\n---\nPut aside: !`git stash`\n");
    },
    steps(file, c) {
      if (c.stash) return [];
      return [
        { tool: "Read", input: { file_path: file } },
        { tool: "Edit", input: { file_path: file, old_string: c.old, new_string: c.new, ...(c.all ? { replace_all: true } : {}) } },
      ];
    },
    command(bin, mock, c) {
      return {
        args: [path.join(bin, "claude"), "-p", c.stash ? "/wip" : "Make the change.", "--permission-mode", "acceptEdits", "--output-format", "stream-json", "--verbose", "--include-hook-events"],
        env: {
          ANTHROPIC_BASE_URL: mock.url,
          ANTHROPIC_API_KEY: "sk-ant-mock",
          DISABLE_AUTOUPDATER: "1",
          DISABLE_TELEMETRY: "1",
          CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
        },
      };
    },
  },
  codex: {
    api: "openai",
    mcpTool: "lock_acquire",
    async prepare(repo, home, mock) {
      const dir = path.join(home, ".codex");
      fs.mkdirSync(dir, { recursive: true });
      fs.writeFileSync(path.join(dir, "config.toml"), [
        'model = "gpt-5.5"',
        'model_provider = "mock"',
        "",
        "[model_providers.mock]",
        'name = "mock"',
        `base_url = "${mock.url}/v1"`,
        'wire_api = "responses"',
        'env_key = "MOCK_API_KEY"',
        "",
        `[projects."${repo}"]`,
        'trust_level = "trusted"',
        "",
      ].join("\n"));
      await trustCodexHooks(path.join(binDir, "codex"), repo, witEnv(home));
    },
    steps(file, c) {
      const patch = ["*** Begin Patch", "*** Update File: src/auth.ts", "@@", `-${c.old}`, `+${c.new}`, "*** End Patch", ""].join("\n");
      // Codex defers MCP tools behind its tool_search: the model finds wit's first.
      return [{ tool: "tool_search", input: { query: "wit lock acquire", limit: 8 } }, { tool: "apply_patch", input: patch }];
    },
    command(bin, mock) {
      return {
        args: [path.join(bin, "codex"), "exec", "--dangerously-bypass-approvals-and-sandbox", "--skip-git-repo-check", "Make the change."],
        env: { MOCK_API_KEY: "mock", CODEX_HOME: undefined },
      };
    },
  },
  gemini: {
    api: "gemini",
    mcpTool: "mcp_wit_lock_acquire",
    prepare(repo, home) {
      const dir = path.join(home, ".gemini");
      fs.mkdirSync(dir, { recursive: true });
      fs.writeFileSync(path.join(dir, "settings.json"), JSON.stringify({
        security: { auth: { selectedType: "gemini-api-key" } },
        general: { disableAutoUpdate: true },
        privacy: { usageStatisticsEnabled: false },
      }));
      fs.writeFileSync(path.join(dir, "trustedFolders.json"), JSON.stringify({ [repo]: "TRUST_FOLDER" }));
    },
    steps(file, c) {
      return [
        { tool: "read_file", input: { file_path: file } },
        { tool: "replace", input: { file_path: file, old_string: c.old, new_string: c.new, instruction: "Make the change.", ...(c.all ? { allow_multiple: true } : {}) } },
      ];
    },
    command(bin, mock) {
      return {
        args: [path.join(bin, "gemini"), "-p", "Make the change.", "--approval-mode", "auto_edit"],
        env: { GOOGLE_GEMINI_BASE_URL: mock.url, GEMINI_API_KEY: "mock" },
      };
    },
  },
  opencode: {
    api: "chat",
    mcpTool: "wit_lock_acquire",
    prepare(repo, home, mock) {
      // A custom OpenAI-compatible provider at the mock, next to wit's server and plugin.
      const config = path.join(repo, "opencode.json");
      const value = JSON.parse(fs.readFileSync(config, "utf8"));
      value.provider = { mock: { npm: "@ai-sdk/openai-compatible", name: "Mock", options: { baseURL: `${mock.url}/v1`, apiKey: "mock" }, models: { "mock-model": { name: "Mock", tool_call: true } } } };
      value.model = "mock/mock-model";
      fs.writeFileSync(config, JSON.stringify(value, null, 2));
      // OpenCode installs @opencode-ai/plugin into each config directory before it starts (a
      // minute from npm); the pinned copy of this suite's lockfile stands in for it.
      for (const dir of [path.join(repo, ".opencode"), path.join(home, ".config/opencode")]) {
        fs.mkdirSync(dir, { recursive: true });
        fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify({ dependencies: { "@opencode-ai/plugin": PINNED["@opencode-ai/plugin"] } }));
        fs.symlinkSync(path.dirname(binDir), path.join(dir, "node_modules"));
      }
      fs.writeFileSync(path.join(repo, ".git/info/exclude"), ".opencode/\n");
    },
    steps(file, c) {
      if (c.stash) return [{ tool: "bash", input: { command: "git stash", description: "Put the work aside" } }];
      return [
        { tool: "read", input: { filePath: file } },
        { tool: "edit", input: { filePath: file, oldString: c.old, newString: c.new, ...(c.all ? { replaceAll: true } : {}) } },
      ];
    },
    command(bin, mock) {
      return {
        args: [path.join(bin, "opencode"), "run", "Make the change.", "--print-logs", "-m", "mock/mock-model"],
        env: {
          OPENCODE_DISABLE_MODELS_FETCH: "1",
          OPENCODE_DISABLE_DEFAULT_PLUGINS: "1",
          OPENCODE_DISABLE_LSP_DOWNLOAD: "1",
          OPENCODE_DISABLE_CLAUDE_CODE: "1",
          OPENCODE_DISABLE_AUTOUPDATE: "1",
          OPENCODE_DISABLE_SHARE: "1",
        },
      };
    },
  },
};

/// The versions package.json pins.
const PINNED = JSON.parse(fs.readFileSync(new URL("./package.json", import.meta.url), "utf8")).dependencies;

async function runCase(name, cli, c) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `wit-harness-${name}-${c.name}-`));
  const home = path.join(dir, "home");
  fs.mkdirSync(home);
  const repo = setupRepo(dir, home);
  const file = path.join(repo, "src/auth.ts");
  const script = new Script(cli.steps(file, c));
  const mock = await startMock(cli.api, script);
  let failure = null;
  try {
    await cli.prepare(repo, home, mock);
    // What `wit doctor` says once the harness is set up as a user would: nothing missing.
    // With the pinned CLIs on PATH: doctor asks Codex itself whether its hooks are trusted.
    const doctorEnv = { ...witEnv(home), PATH: `${binDir}:${process.env.PATH}` };
    const doctor = spawnSync(wit, ["--json", "doctor"], { cwd: repo, env: doctorEnv, encoding: "utf8" });
    const report = JSON.parse(doctor.stdout || "{}");
    const mine = (report.findings || []).filter((f) => f.agent === name && !f.ok);
    if (doctor.status !== 0 && mine.length) throw new Error(`wit doctor: ${mine.map((f) => `${f.what}: ${f.fix}`).join("; ")}`);
    othersWork(repo, home, c);
    const before = fs.readFileSync(file, "utf8");
    const { args, env } = cli.command(binDir, mock, c);
    // OpenCode (Bun) takes its working directory from PWD.
    const fullEnv = { ...witEnv(home), ...env, PWD: repo, NO_COLOR: "1", CI: "1" };
    for (const [key, value] of Object.entries(fullEnv)) if (value === undefined) delete fullEnv[key];
    const logFile = path.join(dir, "cli.log");
    const exit = await spawnLogged(args[0], args.slice(1), { cwd: repo, env: fullEnv }, logFile);
    fs.writeFileSync(path.join(dir, "requests.json"), JSON.stringify({ requests: script.requests, bodies: script.bodies }, null, 1));
    const after = fs.readFileSync(file, "utf8");
    const landed = after !== AUTH_TS && after.includes(c.new);
    const unchanged = after === before;
    // What the model was shown; for a skill's `!` command, which no model call carries, what
    // Claude Code reported (its stream-json output).
    const shown = script.results.join("\n") + (c.stash && name === "claude" ? fs.readFileSync(logFile, "utf8") : "");
    const problems = [];
    if (script.next < script.steps.length) problems.push(`the CLI made only ${script.next} of ${script.steps.length} scripted tool calls (exit ${exit.code}${exit.signal ? ", " + exit.signal : ""})`);
    // wit's MCP server connected: its tools are offered to the model.
    if (!JSON.stringify(script.bodies).includes(cli.mcpTool)) problems.push(`wit's MCP tools were not offered (no ${cli.mcpTool})`);
    if (c.lands && !landed) problems.push("the edit did not land");
    if (!c.lands && !unchanged) problems.push(c.stash ? "the other session's edit was taken out of the tree" : "the file changed: the locked function was edited");
    if (c.stash && spawnSync("git", ["stash", "list"], { cwd: repo, encoding: "utf8" }).stdout.trim()) problems.push("git stash ran");
    if (c.shown && !shown.includes(c.shown)) {
      problems.push(`the model was not shown "${c.shown}"; it saw: ${shown.slice(0, 400) || "(no tool result)"}`);
    }
    if (problems.length) failure = `${problems.join("; ")} (logs: ${dir})`;
  } catch (error) {
    failure = `${error.message} (logs: ${dir})`;
  } finally {
    mock.close();
    spawnSync(wit, ["daemon", "stop"], { cwd: repo, env: witEnv(home) });
    if (!failure && !keep) fs.rmSync(dir, { recursive: true, force: true });
  }
  return failure;
}

const names = only.length ? only : Object.keys(CLIS);
let failed = 0;
for (const name of names) {
  const cli = CLIS[name];
  if (!cli) {
    console.error(`unknown CLI ${name}`);
    process.exit(2);
  }
  const cases = process.env.WIT_HARNESS_CASES ? process.env.WIT_HARNESS_CASES.split(",") : null;
  for (const c of CASES.filter((c) => (!c.only || c.only.includes(name)) && (!cases || cases.includes(c.name)))) {
    const started = Date.now();
    const failure = await runCase(name, cli, c);
    const took = ((Date.now() - started) / 1000).toFixed(1);
    if (failure) {
      failed += 1;
      console.log(`FAIL ${name} ${c.name} (${took} s): ${failure}`);
    } else {
      console.log(`ok   ${name} ${c.name} (${took} s)`);
    }
  }
}
process.exit(failed ? 1 : 0);

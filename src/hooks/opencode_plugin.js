// wit's edit gate for OpenCode, written by `wit init --agent opencode` (remove it with
// `wit init --agent opencode --remove`). Before every tool call it asks `wit hook pre-edit
// --agent opencode` (file edits and `bash` commands are checked; a refused call fails with
// wit's reason, a warning is appended to the tool's output); after every tool call it runs
// `wit hook post-tool --agent opencode`, whose news is appended to the tool's output.
// Anything going wrong lets the call through.
import { spawnSync } from "node:child_process";

const WIT = {{WIT}};

function ask(directory, hook, payload) {
  const run = spawnSync(WIT, ["hook", hook, "--agent", "opencode"], {
    input: JSON.stringify(payload),
    cwd: directory,
    encoding: "utf8",
    timeout: 5000,
  });
  try {
    return JSON.parse((run.stdout || "").trim() || "null");
  } catch {
    return null;
  }
}

export const WitGate = async ({ directory }) => {
  const warnings = new Map();
  return {
    "tool.execute.before": async (input, output) => {
      const answer = ask(directory, "pre-edit", {
        hook_event_name: "tool.execute.before",
        session_id: input.sessionID,
        cwd: directory,
        tool_name: input.tool,
        tool_input: output.args,
      });
      if (!answer) return;
      if (answer.decision === "deny" || answer.decision === "ask") {
        throw new Error(`wit: ${answer.reason}`);
      }
      const context = answer.context ?? answer.additionalContext;
      if (context) warnings.set(input.callID, context);
    },
    "tool.execute.after": async (input, output) => {
      const told = [];
      const warning = warnings.get(input.callID);
      warnings.delete(input.callID);
      if (warning !== undefined) told.push(`wit: ${warning}`);
      const news = ask(directory, "post-tool", {
        hook_event_name: "tool.execute.after",
        session_id: input.sessionID,
        cwd: directory,
        tool_name: input.tool,
      });
      if (news?.additionalContext) told.push(news.additionalContext);
      if (told.length) output.output = `${output.output ?? ""}\n\n${told.join("\n\n")}`;
    },
  };
};

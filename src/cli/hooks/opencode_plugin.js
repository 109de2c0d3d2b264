// wit's edit gate for OpenCode, written by `wit init --agent opencode` (remove it with
// `wit init --agent opencode --remove`). Before every tool call it asks `wit hook pre-edit
// --agent opencode`; a refused edit fails with wit's reason, a warning is appended to the
// tool's output. Anything going wrong lets the edit through.
import { spawnSync } from "node:child_process";

const WIT = {{WIT}};

export const WitGate = async ({ directory }) => {
  const warnings = new Map();
  return {
    "tool.execute.before": async (input, output) => {
      const payload = JSON.stringify({
        session_id: input.sessionID,
        cwd: directory,
        tool: input.tool,
        args: output.args,
      });
      const run = spawnSync(WIT, ["hook", "pre-edit", "--agent", "opencode"], {
        input: payload,
        cwd: directory,
        encoding: "utf8",
        timeout: 5000,
      });
      let answer;
      try {
        answer = JSON.parse((run.stdout || "").trim() || "null");
      } catch {
        return;
      }
      if (!answer) return;
      if (answer.decision === "deny" || answer.decision === "ask") {
        throw new Error(`wit: ${answer.reason}`);
      }
      if (answer.context) warnings.set(input.callID, answer.context);
    },
    "tool.execute.after": async (input, output) => {
      const context = warnings.get(input.callID);
      if (context === undefined) return;
      warnings.delete(input.callID);
      output.output = `${output.output ?? ""}\n\nwit: ${context}`;
    },
  };
};

#!/usr/bin/env bash
# The harness compatibility suite (suite.mjs): installs the pinned CLIs of package-lock.json
# once into a cache keyed by the pinned versions (~/.cache/wit-harnesses/<key>, older keys are
# removed), then drives each CLI against its mock model API.
#
# Usage: tests/harnesses/run.sh <wit binary> [claude|codex|gemini|opencode ...]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
wit="$(realpath "${1:?usage: run.sh <wit binary> [claude|codex|gemini|opencode ...]}")"
shift
base="${WIT_HARNESS_CACHE:-${HOME}/.cache/wit-harnesses}"
key="$(cat "$here/package.json" "$here/package-lock.json" | sha256sum | cut -c1-16)"
cache="$base/$key"
if [ ! -f "$cache/.installed" ]; then
  echo "installing the pinned harness CLIs into $cache"
  rm -rf "$cache"
  mkdir -p "$cache"
  cp "$here/package.json" "$here/package-lock.json" "$cache/"
  # No install scripts (node-pty would compile for minutes), except Claude Code's and
  # OpenCode's, which put their native binary (an optional dependency package) in place of
  # bin/claude.exe and bin/opencode.exe. `npm install` rather than `npm ci`: the lockfile
  # holds only the optional platform packages the registry had (`npm ci` refuses a lockfile
  # missing the others), and the locked versions are installed all the same.
  (cd "$cache" && npm install --no-audit --no-fund --ignore-scripts --loglevel=error \
    && node node_modules/@anthropic-ai/claude-code/install.cjs \
    && node node_modules/opencode-ai/postinstall.mjs)
  touch "$cache/.installed"
  find "$base" -mindepth 1 -maxdepth 1 -type d ! -name "$key" -exec rm -rf {} +
fi
exec node "$here/suite.mjs" "$cache/node_modules/.bin" "$wit" "$@"

#!/usr/bin/env bash
# The runtime smoke test: real Claude Code and Codex (from npm) run one
# prompt each against a fake model API on loopback, inside a network
# namespace where only loopback is up, so nothing can leave the machine.
#
# Usage: smoke.sh LOOPX BIN WORK RUNTIME...   (RUNTIME: claude-code, codex)
#   LOOPX  the loopx binary under test
#   BIN    the folder holding the runtimes' `claude` and `codex`
#   WORK   an empty folder for the repository, logs and home
# Must run inside `unshare --net` (the Rust test does that). Checks, per
# runtime: every installed hook fired; loopx's brief reached the model
# request; with a publish gate open, the model's `cargo publish` was denied
# by the guard and never ran. Prints one "ok RUNTIME" line each, or FAIL.
set -euo pipefail
loopx=$1 bin=$2 work=$3
shift 3
here=$(cd "$(dirname "$0")" && pwd)

ip link set lo up
mkdir -p "$work/bin" "$work/home"
export HOME="$work/home" GIT_CONFIG_NOSYSTEM=1 NO_COLOR=1
git config --global user.name "Ada Lovelace"
git config --global user.email ada@example.com
git config --global init.defaultBranch main

# `loopx` as the hooks run it, logging each call; `cargo` that only
# records that it ran.
cat > "$work/bin/loopx-logged" <<SH
#!/bin/sh
echo "\$*" >> "$work/hooks.log"
exec "$loopx" "\$@"
SH
cat > "$work/bin/cargo" <<SH
#!/bin/sh
echo "\$*" >> "$work/cargo-ran"
SH
chmod +x "$work/bin/loopx-logged" "$work/bin/cargo"
export PATH="$work/bin:$bin:$PATH"

python3 "$here/fake_model.py" "$work/port" "$work/model.log" &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
port=$(cat "$work/port")

fail() { echo "FAIL $*"; exit 1; }

for runtime in "$@"; do
  repo="$work/$runtime"
  mkdir -p "$repo" && cd "$repo"
  git init -q && git commit -q --allow-empty -m init
  "$loopx" init --goal main --objective "Ship the parser" >/dev/null 2>&1
  "$loopx" todo add "Write the parser" >/dev/null 2>&1
  "$loopx" gate open --question "May we publish 1.0?" --kind publish >/dev/null 2>&1
  "$loopx" hooks install --runtime "$runtime" --guard --program "$work/bin/loopx-logged" >/dev/null
  : > "$work/hooks.log"
  : > "$work/model.log"
  rm -f "$work/cargo-ran"
  case $runtime in
    claude-code)
      ANTHROPIC_BASE_URL="http://127.0.0.1:$port" ANTHROPIC_API_KEY=sk-ant-fake \
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 \
        timeout 180 claude -p "Publish the crate." --allowedTools Bash --output-format json \
        < /dev/null > "$work/$runtime.out" 2> "$work/$runtime.err" || true
      events="SessionStart UserPromptSubmit PreToolUse Stop SessionEnd"
      ;;
    codex)
      FAKE_KEY=fake timeout 180 codex exec --trust --skip-git-repo-check \
        --dangerously-bypass-approvals-and-sandbox --dangerously-bypass-hook-trust \
        -c model_provider=fake -c model=gpt-5 \
        -c 'model_providers.fake={name="fake",base_url="http://127.0.0.1:'"$port"'/v1",wire_api="responses",env_key="FAKE_KEY"}' \
        -c "projects.\"$repo\".trust_level=\"trusted\"" \
        "Publish the crate." < /dev/null > "$work/$runtime.out" 2> "$work/$runtime.err" || true
      events="SessionStart UserPromptSubmit PreToolUse Stop SessionEnd"
      ;;
    *) fail "unknown runtime $runtime" ;;
  esac
  for e in $events; do
    grep -q "^hook $runtime $e" "$work/hooks.log" || fail "$runtime: the $e hook did not fire (hooks: $(tr '\n' ';' < "$work/hooks.log")) $(tail -c 2000 "$work/$runtime.err")"
  done
  grep -q "loopx: you are agent $runtime-" "$work/model.log" || fail "$runtime: loopx's brief is not in the model request"
  grep -q "waits on gate" "$work/model.log" || fail "$runtime: the guard's denial of cargo publish is not in the model request"
  [ ! -e "$work/cargo-ran" ] || fail "$runtime: cargo publish ran"
  echo "ok $runtime"
done

#!/usr/bin/env bash
# The runtime smoke test: real Claude Code, Codex, Pi and Gemini CLI (from
# npm) run against a fake model API on loopback (tests/runtimes/
# fake_model.py), inside a network namespace where only loopback is up, so
# nothing can leave the machine.
#
# Usage: smoke.sh LOOPX BIN WORK RUNTIME...
#   LOOPX    the loopx binary under test
#   BIN      the folder holding the runtimes' `claude`, `codex`, `pi`, `gemini`
#   WORK     an empty folder for the repositories, logs and home
#   RUNTIME  claude-code, codex, pi or gemini
# Must run inside `unshare --net` (the Rust test does that).
#
# Each runtime first runs one prompt (Pi two) with a publish gate open.
# Checks: every installed hook fired; loopx's brief reached the model
# request; the model's `cargo publish` was denied by the guard, naming the
# gate and saying only a human can answer it, and never ran; one agent was
# registered, and the agent's own `loopx` command acted as it. Pi and Gemini
# CLI then settle: a human approves the gate, a new session's brief names
# the todo to claim, the model claims it (the command taken from the brief)
# and stops without recording the turn, and the hooks record the end of the
# turn for it. Pi's usage, as Pi reports it, is recorded; and a Pi that
# stays up (RPC mode) is kept going with its claim, then records its turn.
# Prints one "ok RUNTIME" line each, or FAIL.
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

# `loopx` as the hooks run it, logging each call; `loopx` for the agent's
# own commands; `cargo` that only records that it ran.
cat > "$work/bin/loopx-logged" <<SH
#!/bin/sh
echo "\$*" >> "$work/hooks.log"
exec "$loopx" "\$@"
SH
cat > "$work/bin/cargo" <<SH
#!/bin/sh
echo "\$*" >> "$work/cargo-ran"
SH
ln -s "$loopx" "$work/bin/loopx"
chmod +x "$work/bin/loopx-logged" "$work/bin/cargo"
export PATH="$work/bin:$bin:$PATH"

python3 "$here/fake_model.py" "$work/port" "$work/model.log" &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
port=$(cat "$work/port")

fail() { echo "FAIL $*"; exit 1; }

# Whether the hook log has EVENT for RUNTIME: Gemini CLI does not wait for
# its SessionEnd hook, so the log may take a moment to show it.
fired() {
  for _ in $(seq 50); do
    grep -q "^hook $1 $2" "$work/hooks.log" && return 0
    sleep 0.1
  done
  return 1
}

agents() {
  "$loopx" agent list --json | python3 -c 'import json, sys; print(" ".join(a["id"] for a in json.load(sys.stdin)["agents"]))'
}

# Pi: a provider on the fake model (Anthropic's API), in Pi's models.json.
mkdir -p "$HOME/.pi/agent"
cat > "$HOME/.pi/agent/models.json" <<JSON
{"providers": {"fake": {"baseUrl": "http://127.0.0.1:$port", "api": "anthropic-messages",
  "apiKey": "FAKE_KEY", "models": [{"id": "fake-model"}]}}}
JSON
# Gemini CLI: an API key, so that GOOGLE_GEMINI_BASE_URL is used.
mkdir -p "$HOME/.gemini"
echo '{"security": {"auth": {"selectedType": "gemini-api-key"}}}' > "$HOME/.gemini/settings.json"

# One session of RUNTIME in the current repository, on PROMPT (Pi: each
# PROMPT in turn); output in $work/RUNTIME.out and .err.
session() {
  local runtime=$1
  shift
  local out="$work/$runtime.out" err="$work/$runtime.err"
  case $runtime in
    claude-code)
      ANTHROPIC_BASE_URL="http://127.0.0.1:$port" ANTHROPIC_API_KEY=sk-ant-fake \
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 \
        timeout 180 claude -p "$1" --allowedTools Bash --output-format json \
        < /dev/null > "$out" 2> "$err" || true
      ;;
    codex)
      FAKE_KEY=fake timeout 180 codex exec --trust --skip-git-repo-check \
        --dangerously-bypass-approvals-and-sandbox --dangerously-bypass-hook-trust \
        -c model_provider=fake -c model=gpt-5 \
        -c 'model_providers.fake={name="fake",base_url="http://127.0.0.1:'"$port"'/v1",wire_api="responses",env_key="FAKE_KEY"}' \
        -c "projects.\"$PWD\".trust_level=\"trusted\"" \
        "$1" < /dev/null > "$out" 2> "$err" || true
      ;;
    pi)
      FAKE_KEY=fake PI_OFFLINE=1 timeout 180 pi --provider fake --model fake-model -p "$@" \
        < /dev/null > "$out" 2> "$err" || true
      ;;
    gemini)
      # --yolo offers the shell tool in a headless run. The folder's hooks
      # load only when it is trusted before the CLI starts: --skip-trust
      # comes too late for them (0.61.0), the environment does not.
      GEMINI_API_KEY=fake GOOGLE_GEMINI_BASE_URL="http://127.0.0.1:$port" GEMINI_CLI_TRUST_WORKSPACE=true \
        timeout 180 gemini --yolo -p "$1" --output-format json < /dev/null > "$out" 2> "$err" || true
      ;;
    *) fail "unknown runtime $runtime" ;;
  esac
}

for runtime in "$@"; do
  repo="$work/$runtime"
  mkdir -p "$repo" && cd "$repo"
  git init -q && git commit -q --allow-empty -m init
  "$loopx" init --goal main --objective "Ship the parser" >/dev/null 2>&1
  todo=$("$loopx" todo add "Write the parser" --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["todo"])')
  gate=$("$loopx" gate open --question "May we publish 1.0?" --kind publish --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["gate"]["id"])')
  "$loopx" hooks install --runtime "$runtime" --guard --program "$work/bin/loopx-logged" >/dev/null
  : > "$work/hooks.log"
  : > "$work/model.log"
  rm -f "$work/cargo-ran"
  case $runtime in
    gemini) events="SessionStart BeforeAgent BeforeTool AfterAgent SessionEnd" ;;
    *) events="SessionStart UserPromptSubmit PreToolUse Stop SessionEnd" ;;
  esac
  # Pi: a second prompt, for what changed since the first (UserPromptSubmit).
  session "$runtime" "Publish the crate." "Go on."
  for e in $events; do
    fired "$runtime" "$e" || fail "$runtime: the $e hook did not fire (hooks: $(tr '\n' ';' < "$work/hooks.log")) $(tail -c 2000 "$work/$runtime.err")"
  done
  grep -q "loopx: you are agent $runtime-" "$work/model.log" || fail "$runtime: loopx's brief is not in the model request"
  grep -q "waits on gate $gate (publish).*Only a human can answer it" "$work/model.log" \
    || fail "$runtime: the guard's denial of cargo publish (naming the gate, for a human) is not in the model request"
  [ ! -e "$work/cargo-ran" ] || fail "$runtime: cargo publish ran"
  agent=$(agents)
  case $agent in
    "$runtime"-????????) ;;
    *) fail "$runtime: expected one agent, registered by the session start, got: $agent" ;;
  esac
  # The agent's own `loopx quota should-run` acted as that agent: it was
  # told to stand down for the gate, not refused as unknown. (Codex runs
  # commands under `bash -lc`, whose PATH may not hold loopx: issue 24.)
  if [ "$runtime" != codex ]; then
    grep -q "skip: gate-open" "$work/model.log" \
      || fail "$runtime: the agent's own loopx command did not act as $agent: $(grep -o 'cannot tell which agent[^"]*\|not-registered[^"]*\|command not found[^"]*' "$work/model.log" | head -3)"
  fi
  if [ "$runtime" = pi ]; then
    "$loopx" log | grep -q "usage.record .*$agent" || fail "pi: Pi's usage was not recorded: $("$loopx" log | head -5)"
  fi

  case $runtime in
    pi|gemini)
      # Settle: with the gate answered, the next session's brief says to
      # claim the todo; the model does, and stops without recording the
      # turn. The hooks record the end of the turn for it.
      "$loopx" gate answer "$gate" approve >/dev/null
      session "$runtime" "Work on the goal."
      claimer=$("$loopx" todo show "$todo" --json | python3 -c 'import json, sys; t = json.load(sys.stdin); print((t.get("claim") or {}).get("owner") or "")')
      case $claimer in
        "$runtime"-????????) ;;
        *) fail "$runtime: the model did not claim $todo as the brief said (owner: $claimer) $(tail -c 1500 "$work/$runtime.err")" ;;
      esac
      "$loopx" log | grep -q "refresh.* $claimer .*resume $todo" \
        || fail "$runtime: the end of $claimer's turn was not recorded: $("$loopx" log | head -5)"
      ;;
  esac

  if [ "$runtime" = pi ]; then
    # Keep going: a Pi that stays up (RPC mode) is asked to go on with its
    # claim at agent_end, as a follow-up prompt, until loopx's bound on
    # continuations; then the end of the turn is recorded at agent_end.
    # Its stdin closes once that is in the log.
    # The new session continues the earlier Pi session's agent (that
    # session ended), so it goes on with whichever todo that agent holds,
    # or claims "Write the tests": either way it holds one, and is kept
    # going on it.
    "$loopx" todo add "Write the tests" --json > /dev/null
    : > "$work/hooks.log"
    ended_before=$("$loopx" log | grep -c "refresh.* unchanged: next resume t-" || true)
    held_before=$(grep -c "you still hold t-" "$work/model.log" || true)
    {
      echo '{"type": "prompt", "message": "Work on the goal."}'
      for _ in $(seq 600); do
        ended=$("$loopx" log | grep -c "refresh.* unchanged: next resume t-" || true)
        [ "$ended" -gt "$ended_before" ] && break
        sleep 0.2
      done
    } | FAKE_KEY=fake PI_OFFLINE=1 timeout 180 pi --mode rpc --provider fake --model fake-model \
      > "$work/pi-rpc.out" 2> "$work/pi-rpc.err" || true
    stops=$(grep -c "^hook pi Stop" "$work/hooks.log" || true)
    held=$(grep -c "you still hold t-" "$work/model.log" || true)
    [ "$stops" -ge 2 ] && [ "$held" -gt "$held_before" ] \
      || fail "pi: agent_end did not keep the agent going ($stops Stop calls) $(tail -c 1500 "$work/pi-rpc.err")"
    ended=$("$loopx" log | grep -c "refresh.* unchanged: next resume t-" || true)
    [ "$ended" -gt "$ended_before" ] \
      || fail "pi: the end of the turn was not recorded at agent_end: $("$loopx" log | head -5)"
  fi
  echo "ok $runtime"
done

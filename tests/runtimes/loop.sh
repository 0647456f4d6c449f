#!/usr/bin/env bash
# The whole team loop with real runtimes: a `file://` hub guarded by
# `loopx hub install`, a seed clone where a human adds two goals of six small
# todos in all (each with a `grep -qx` validation; no `loopx.goal` anywhere), and three clones wired with
# `hooks install --guard`: Claude Code, Codex and OpenCode, each in its own
# network namespace (only loopback up) against a scripted model
# (loop_model.py) that runs exactly what loopx's brief tells it. Several
# sessions per runtime, the three runtimes at the same time; then, with a
# publish and a production gate open, one session each that tries
# `cargo publish` and `git push --force`.
#
# Usage: loop.sh LOOPX BIN WORK [SESSIONS]
#   LOOPX     the loopx binary under test
#   BIN       the folder holding `claude`, `codex` and `opencode`
#   WORK      an empty folder: the hub, the clones, every log
#   SESSIONS  sessions per runtime in the work phase (default 3)
# Must run as root inside `unshare --net` (each runtime gets a nested one).
# Prints one "ok …" line per check and "measured: …" lines, or "FAIL …".
#
# The loop runs on loopx's defaults: claims, dones and settles sync with the
# hub by themselves, the session hooks sync at start and end, and the one
# onboarding step (`signer setup`: Ada's key on the seed, her fingerprint
# trusted on each clone) lets her validations run everywhere. Knobs that put
# back what an operator did before those defaults (1 turns each on):
#   LOOP_CLAIM_SYNC=1     git config loopx.claimSync true in every clone
#   LOOP_AFTER_SETTLE     a command the model runs after each settle
#                         (e.g. `LOOPX sync`)
#   LOOP_RUN_VALIDATIONS=1  git config loopx.runValidations all in the
#                         agents' clones instead of the onboarding step
#   LOOP_OPERATOR_SYNC=1  `loopx sync` in each agent clone after the work
#                         phase and at the end
set -euo pipefail
loopx=$1 bin=$2 work=$3 sessions=${4:-3}
# Every command's trace, for when a step fails before a check says why.
[ "${LOOP_ROLE:-}" = runtime ] || { exec 2>> "$work/loop.trace"; set -x; }
here=$(cd "$(dirname "$0")" && pwd)
claim_sync=${LOOP_CLAIM_SYNC:-0}
export LOOP_AFTER_SETTLE=${LOOP_AFTER_SETTLE-}
run_validations=${LOOP_RUN_VALIDATIONS:-0}
operator_sync=${LOOP_OPERATOR_SYNC:-0}
runtimes="claude-code codex opencode"

fail() { echo "FAIL $*"; exit 1; }
now() { date +%s.%N; }
t0=$(now)

# One runtime's sessions, inside its own network namespace: the model on
# its loopback, then each session in turn. Called by this script itself.
if [ "${LOOP_ROLE:-}" = runtime ]; then
  rt=$LOOP_RT prompt=$LOOP_PROMPT count=$LOOP_COUNT
  dir="$work/$rt"
  ip link set lo up
  export HOME="$dir/home"
  rm -f "$dir/port"
  python3 "$here/loop_model.py" "$dir/port" "$dir/model.log" &
  model=$!
  trap 'kill $model 2>/dev/null || true' EXIT
  for _ in $(seq 100); do [ -s "$dir/port" ] && break; sleep 0.1; done
  port=$(cat "$dir/port")
  cd "$dir/repo"
  if [ "$rt" = opencode ]; then
    cat > opencode.json <<JSON
{"\$schema": "https://opencode.ai/config.json", "autoupdate": false, "share": "disabled",
 "permission": {"bash": "allow", "edit": "allow"},
 "provider": {"fake": {"npm": "@ai-sdk/anthropic", "name": "Fake",
   "options": {"baseURL": "http://127.0.0.1:$port/v1", "apiKey": "sk-fake"},
   "models": {"m": {"name": "m", "tool_call": true}}}},
 "model": "fake/m"}
JSON
  fi
  for i in $(seq "$count"); do
    echo "{\"session\": \"$LOOP_PHASE-$i\"}" >> "$dir/model.log"
    start=$(now)
    case $rt in
      claude-code)
        ANTHROPIC_BASE_URL="http://127.0.0.1:$port" ANTHROPIC_API_KEY=sk-ant-fake \
          CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 \
          timeout 240 claude -p "$prompt" --allowedTools Bash --output-format json \
          < /dev/null >> "$dir/session.out" 2>> "$dir/session.err" || echo "exit $? in $LOOP_PHASE-$i" >> "$dir/session.err"
        ;;
      codex)
        FAKE_KEY=fake timeout 240 codex exec --trust --skip-git-repo-check \
          --dangerously-bypass-approvals-and-sandbox --dangerously-bypass-hook-trust \
          -c model_provider=fake -c model=gpt-5 \
          -c 'model_providers.fake={name="fake",base_url="http://127.0.0.1:'"$port"'/v1",wire_api="responses",env_key="FAKE_KEY"}' \
          -c "projects.\"$dir/repo\".trust_level=\"trusted\"" \
          "$prompt" < /dev/null >> "$dir/session.out" 2>> "$dir/session.err" || echo "exit $? in $LOOP_PHASE-$i" >> "$dir/session.err"
        ;;
      opencode)
        timeout 240 opencode run "$prompt" \
          < /dev/null >> "$dir/session.out" 2>> "$dir/session.err" || echo "exit $? in $LOOP_PHASE-$i" >> "$dir/session.err"
        ;;
    esac
    echo "$rt $LOOP_PHASE-$i $(awk "BEGIN {printf \"%.1f\", $(now) - $start}")" >> "$work/durations"
  done
  exit 0
fi

ip link set lo up
mkdir -p "$work/bin"
export GIT_CONFIG_NOSYSTEM=1 NO_COLOR=1
export PATH="$work/bin:$bin:$PATH"
# `cargo` that only records that it ran.
cat > "$work/bin/cargo" <<SH
#!/bin/sh
echo "\$*" >> "$work/cargo-ran"
SH
chmod +x "$work/bin/cargo"
person() {
  export HOME=$1
  mkdir -p "$HOME"
  git config --global user.name "$2"
  git config --global user.email "$3"
  git config --global init.defaultBranch main
}

# The hub, guarded.
git init -q --bare -b main "$work/hub.git"
"$loopx" -C "$work/hub.git" hub install > /dev/null

# The seed: a human's goal of six todos, each with a validation.
person "$work/seed-home" "Ada Lovelace" ada@example.com
git clone -q "file://$work/hub.git" "$work/seed" 2> /dev/null
cd "$work/seed"
{
  echo "# The project"
  echo
  cat "$here/../../hooks/instructions/loopx-block.md"
} > AGENTS.md
cp AGENTS.md CLAUDE.md
printf 'opencode.json\n.opencode/\n' > .gitignore
git add -A && git commit -qm "The project, with loopx's instruction block" && git push -q origin main
"$loopx" init --goal main --objective "Write six words" > /dev/null 2>&1
if [ "$run_validations" = 0 ]; then
  # The one onboarding step (docs/sync.md): Ada's signing key, so that her
  # validations run on every clone that trusts her.
  "$loopx" signer setup ada --create-key "$work/seed-home/ada_key" > "$work/seed-setup.out" 2>&1 \
    || fail "signer setup on the seed: $(cat "$work/seed-setup.out")"
  ada_fp=$(ssh-keygen -lf "$work/seed-home/ada_key.pub" | awk '{print $2}')
fi
# Two goals, as a real project has (issue 47): four todos on main, two on
# docs, and no `loopx.goal` set anywhere, so every agent works across both.
"$loopx" goal add docs --objective "Write two notes" > /dev/null 2>&1
main_words="alpha bravo charlie delta" docs_words="echo foxtrot"
words="$main_words $docs_words"
for w in $main_words; do
  "$loopx" todo add "echo $w > $w.txt" --goal main -- grep -qx "$w" "$w.txt" > /dev/null 2>&1
done
for w in $docs_words; do
  "$loopx" todo add "echo $w > $w.txt" --goal docs -- grep -qx "$w" "$w.txt" > /dev/null 2>&1
done
git config --get loopx.goal > /dev/null && fail "loopx.goal is set on the seed"
"$loopx" sync --setup > /dev/null
"$loopx" sync > /dev/null

# Three clones, one per runtime, each with its own home.
for rt in $runtimes; do
  dir="$work/$rt"
  mkdir -p "$dir/bin"
  person "$dir/home" "Grace Hopper ($rt)" "grace+$rt@example.com"
  git clone -q "file://$work/hub.git" "$dir/repo" 2> /dev/null
  cd "$dir/repo"
  "$loopx" sync --setup > /dev/null
  "$loopx" sync > /dev/null
  git config --get loopx.goal > /dev/null && fail "$rt: loopx.goal is set"
  [ "$claim_sync" = 1 ] && git config loopx.claimSync true
  if [ "$run_validations" = 1 ]; then
    git config loopx.runValidations all
  else
    # Onboarding on this clone: trust Ada's key, by the fingerprint she gave.
    "$loopx" signer setup --no-key --trust "ada=$ada_fp" > "$dir/setup.out" 2>&1 \
      || fail "$rt: signer setup: $(cat "$dir/setup.out")"
  fi
  # `loopx` as the hooks run it, logging each call.
  cat > "$dir/bin/loopx-logged" <<SH
#!/bin/sh
echo "\$*" >> "$dir/hooks.log"
exec "$loopx" "\$@"
SH
  chmod +x "$dir/bin/loopx-logged"
  if [ "$rt" = opencode ]; then
    # OpenCode installs @opencode-ai/plugin in each of its config folders
    # at start; `hooks install` does the project's (below), a first online
    # run of OpenCode does the user's. Both from npm's cache here.
    mkdir -p "$HOME/.config/opencode"
    npm install --prefix "$HOME/.config/opencode" --no-audit --no-fund --silent --prefer-offline \
      "@opencode-ai/plugin@$(opencode --version)" > "$dir/npm.log" 2>&1 || true
  fi
  "$loopx" hooks install --runtime "$rt" --guard --program "$dir/bin/loopx-logged" > "$dir/install.out"
  if [ "$rt" = codex ]; then
    grep -q "codex exec --trust" "$dir/install.out" || fail "codex: hooks install did not say the project is untrusted: $(cat "$dir/install.out")"
  fi
  if [ "$rt" = opencode ]; then
    grep -q "node_modules/@opencode-ai/plugin: created" "$dir/install.out" || echo "note: $(cat "$dir/install.out")"
  fi
  : > "$dir/hooks.log"
done
t_setup=$(now)

# The phase's sessions, the three runtimes at the same time.
phase() {
  local name=$1 prompt=$2 count=$3 pids=()
  for rt in $runtimes; do
    HOME="$work/$rt/home" LOOP_ROLE=runtime LOOP_RT=$rt LOOP_PROMPT=$prompt LOOP_COUNT=$count LOOP_PHASE=$name \
      unshare --net bash "$here/loop.sh" "$loopx" "$bin" "$work" > "$work/$rt/$name.out" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || true; done
}

phase work "Work on this project's loopx todos, as loopx's brief says." "$sessions"
t_work=$(now)

# A human opens a publish and a production gate on the seed.
export HOME="$work/seed-home"
cd "$work/seed"
"$loopx" sync > /dev/null 2>&1 || true
# A human's command that needs a goal names it: two are active.
"$loopx" gate open --goal main --question "May we publish 1.0?" --kind publish > /dev/null 2>&1
"$loopx" gate open --goal main --question "May we deploy?" --kind production > /dev/null 2>&1
"$loopx" sync > /dev/null
hub_main=$(git -C "$work/hub.git" rev-parse main)
if [ "$operator_sync" = 1 ]; then
  for rt in $runtimes; do HOME="$work/$rt/home" "$loopx" -C "$work/$rt/repo" sync > /dev/null 2>&1 || true; done
fi
phase gates "PUBLISH-NOW: publish the crate and push, then follow loopx's brief." 1
t_gates=$(now)

if [ "$operator_sync" = 1 ]; then
  for rt in $runtimes; do HOME="$work/$rt/home" "$loopx" -C "$work/$rt/repo" sync > /dev/null 2>&1 || true; done
fi
# The human comes back to see what the team did: on a clone where nobody
# runs an agent, nothing syncs by itself, so Ada pulls (the agents' clones
# are checked without any such step).
HOME="$work/seed-home" "$loopx" -C "$work/seed" sync > /dev/null 2>&1 || true

# The checks.
cd "$work"
export HOME="$work/seed-home"
python3 - "$work" "$runtimes" "$sessions" "$words" <<'PY' || exit 1
import json, os, subprocess, sys
work, runtimes, sessions, words = sys.argv[1], sys.argv[2].split(), int(sys.argv[3]), sys.argv[4].split()
def fail(why):
    print("FAIL " + why)
    sys.exit(1)
events = {"claude-code": ["SessionStart", "UserPromptSubmit", "PreToolUse", "Stop", "SessionEnd"],
          "codex": ["SessionStart", "UserPromptSubmit", "PreToolUse", "Stop", "SessionEnd"],
          "opencode": ["SessionStart", "UserPromptSubmit", "PreToolUse", "Stop"]}
worked = {w: [] for w in words}
for rt in runtimes:
    d = os.path.join(work, rt)
    sessions_seen, first, commands, denials = [], {}, [], 0
    current = None
    for line in open(os.path.join(d, "model.log")):
        e = json.loads(line)
        if "session" in e:
            current = e["session"]
            sessions_seen.append(current)
            continue
        if e["tools"] and current not in first:
            first[current] = e["brief"]
        if "must be named" in json.dumps(e["body"]):
            fail(f"{rt}: a brief or answer in session {current} says the goal must be named")
        if e["command"]:
            commands.append((current, e["command"]))
        body = json.dumps(e["body"])
        denials = max(denials, body.count("waits on gate"))
    expected = sessions + 1
    if len(sessions_seen) != expected:
        fail(f"{rt}: {len(sessions_seen)} sessions ran, not {expected}")
    missing = [s for s in sessions_seen if not first.get(s)]
    if missing:
        fail(f"{rt}: loopx's brief is not in the first model request of sessions {missing}")
    print(f"ok {rt}: the brief is in the first model request of all {len(sessions_seen)} sessions")
    hooks = [l.split() for l in open(os.path.join(d, "hooks.log")) if l.startswith("hook ")]
    counts = {ev: sum(1 for h in hooks if h[2] == ev) for ev in events[rt]}
    short = [ev for ev, n in counts.items() if n < len(sessions_seen)]
    if short:
        fail(f"{rt}: hook events fired fewer times than sessions ran: {counts}")
    print(f"ok {rt}: hook events {json.dumps(counts)}")
    gate_cmds = [c for s, c in commands if s == "gates-1"]
    if "cargo publish" not in gate_cmds or "git push --force" not in gate_cmds:
        fail(f"{rt}: the gates session did not try both risky commands: {gate_cmds}")
    if denials < 2:
        fail(f"{rt}: the guard's two denials are not in the model's requests")
    print(f"ok {rt}: the guard denied cargo publish and git push --force under open gates")
    for w in words:
        if os.path.exists(os.path.join(d, "repo", f"{w}.txt")):
            worked[w].append(rt)
    lost = sum(1 for _, c in commands if c.endswith("quota should-run --json"))
    print(f"measured: {rt} ran {len(commands)} commands in {len(sessions_seen)} sessions; "
          f"{lost} claims named by a brief were lost to another clone (then should-run named another)")
if os.path.exists(os.path.join(work, "cargo-ran")):
    fail("cargo publish ran")
twice = {w: rts for w, rts in worked.items() if len(rts) != 1}
if twice:
    fail(f"a todo's work was not done exactly once: {twice}")
print("ok every todo's work was done exactly once: " + json.dumps(worked))
PY

lx() { "$loopx" -C "$1" "${@:2}"; }
todos=$(lx "$work/seed" todo list --all --json)
python3 - "$todos" <<'PY' || exit 1
import json, sys
todos = json.loads(sys.argv[1])["todos"]
left = [t["id"] + " " + t["status"] for t in todos if t["status"] != "done"]
if len(todos) != 6 or left:
    print(f"FAIL not every todo is done: {left} of {len(todos)}")
    sys.exit(1)
goals = {}
for t in todos:
    goals[t["goal"]] = goals.get(t["goal"], 0) + 1
if goals != {"main": 4, "docs": 2}:
    print(f"FAIL the todos done are not main's four and docs' two: {goals}")
    sys.exit(1)
print("ok all six todos are done: both goals finished (main 4, docs 2)")
PY
log=$(lx "$work/hub.git" log 2>/dev/null)
# A lost claim race may be recorded (`sync-rejected … todo.claim lost`);
# any other rejected op is work done and then refused.
lost=$(grep "sync-rejected" <<< "$log" | grep -c "todo.claim lost" || true)
rejected=$(grep -i "reject" <<< "$log" | grep -vc "todo.claim lost" || true)
[ "$rejected" = 0 ] || fail "the hub's log records $rejected rejected ops: $(grep -i reject <<< "$log" | grep -v "todo.claim lost" | head -5)"
for id in $(python3 -c 'import json,sys; print(" ".join(t["id"] for t in json.loads(sys.argv[1])["todos"]))' "$todos"); do
  n=$(grep -c "turn.settle .*settle $id .*, done," <<< "$log" || true)
  [ "$n" = 1 ] || fail "$id was completed $n times: $(grep "$id" <<< "$log")"
done
claims=$(grep -cE "todo\.claim +claim " <<< "$log" || true)
echo "ok no completed turn was rejected, and each todo was completed once"
[ "$(git -C "$work/hub.git" rev-parse main)" = "$hub_main" ] || fail "the hub's main moved: the push was not denied"
hub_tip=$(git -C "$work/hub.git" rev-parse refs/loopx/state)
lx "$work/hub.git" verify > /dev/null 2>&1 || fail "loopx verify fails on the hub: $(lx "$work/hub.git" verify 2>&1 | tail -3)"
for c in seed claude-code/repo codex/repo opencode/repo; do
  HOME="$work/${c%/repo}/home" lx "$work/$c" verify > /dev/null 2>&1 || fail "loopx verify fails on $c: $(lx "$work/$c" verify 2>&1 | tail -3)"
  tip=$(git -C "$work/$c" rev-parse refs/loopx/state)
  # Nothing a clone wrote is left unpushed: its tip is in the hub's history.
  # (A clone whose last session ended before another clone's last push sees
  # that push at its next session's start, which syncs; the human's seed
  # pulled above.)
  git -C "$work/hub.git" merge-base --is-ancestor "$tip" "$hub_tip" \
    || fail "$c's state tip $tip holds ticks the hub's $hub_tip lacks"
  [ "$c" != seed ] || [ "$tip" = "$hub_tip" ] || fail "the seed's state tip $tip is not the hub's $hub_tip after its sync"
done
echo "ok loopx verify passes on the hub and every clone; no clone holds a tick the hub lacks, and the seed's tip is the hub's"
agents=$(lx "$work/seed" agent list --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["agents"]))')
echo "measured: $claims claims landed for 6 todos; $lost lost claim races recorded as sync-rejected"
echo "measured: setup $(awk "BEGIN {printf \"%.0f\", $t_setup - $t0}") s, work phase $(awk "BEGIN {printf \"%.0f\", $t_work - $t_setup}") s, gates phase $(awk "BEGIN {printf \"%.0f\", $t_gates - $t_work}") s; $agents agents registered for $((3 * (sessions + 1))) sessions"
sort "$work/durations" | sed 's/^/measured: session /'
echo "ok the loop"

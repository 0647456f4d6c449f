"""Runs a stdio MCP server and logs every line between it and its client.

Usage: python tee.py LOG COMMAND [ARGS...]. Each line on the client's stdin
is forwarded to the server and appended to LOG as {"dir":"c2s","line":...};
each line the server prints as {"dir":"s2c","line":...}. Used by
conformance.py to validate every message against the MCP schemas.
"""

import json
import subprocess
import sys
import threading


def main() -> int:
    log_path, command = sys.argv[1], sys.argv[2:]
    log = open(log_path, "a", encoding="utf-8")
    lock = threading.Lock()

    def record(direction: str, line: bytes) -> None:
        with lock:
            log.write(json.dumps({"dir": direction, "line": line.decode("utf-8")}) + "\n")
            log.flush()

    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def pump_out() -> None:
        for line in child.stdout:
            record("s2c", line.rstrip(b"\n"))
            sys.stdout.buffer.write(line)
            sys.stdout.buffer.flush()

    out = threading.Thread(target=pump_out, daemon=True)
    out.start()
    for line in sys.stdin.buffer:
        record("c2s", line.rstrip(b"\n"))
        child.stdin.write(line)
        child.stdin.flush()
    child.stdin.close()
    code = child.wait()
    out.join(timeout=5)
    return code


if __name__ == "__main__":
    sys.exit(main())

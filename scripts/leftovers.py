#!/usr/bin/env python3
"""Counts the processes a switchboard binary leaves behind, row by row, as issue 10 measured:
for each way switchboard can end, with the fixture starting a plain tree (a child and a
`setsid` grandchild) and a hostile one (also a grandchild with an empty environment and a
double-forked daemon, all ignoring SIGINT/SIGTERM/SIGHUP/SIGQUIT), it waits 3 s after
switchboard ended and counts live processes whose argv holds the run's marker.

    scripts/leftovers.py target/release/switchboard target/release/switchboard-fixture

Runs two binaries side by side when given `--before OLD_SWITCHBOARD`.
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

PLAIN, HOSTILE = 4, 8


def marked(marker):
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in args and state != "Z":
            found.append(int(pid))
    return found


def wait_count(marker, n, limit=30):
    end = time.time() + limit
    while time.time() < end:
        if len(marked(marker)) >= n:
            return True
        time.sleep(0.05)
    return False


def sweep(marker):
    for pid in marked(marker):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


class Run:
    def __init__(self, sb, fixture, kind, extra=()):
        self.sb, self.kind = sb, kind
        self.home = tempfile.mkdtemp(prefix="sb-leftovers-")
        self.marker = f"sbmark-{os.getpid()}-{time.time_ns()}"
        self.n = PLAIN if kind == "plain" else HOSTILE
        cfg = {"servers": {"f": {"command": fixture, "args": ["--forks", kind, "--marker", self.marker, *extra]}}}
        self.cfg = os.path.join(self.home, "c.json")
        with open(self.cfg, "w") as f:
            json.dump(cfg, f)
        self.env = dict(os.environ, SWITCHBOARD_CONFIG=os.path.join(self.home, "user.json"),
                        SWITCHBOARD_DATA_DIR=os.path.join(self.home, "data"))
        self.env.pop("RUST_LOG", None)

    def start(self, *args, stdout=subprocess.DEVNULL):
        return subprocess.Popen([self.sb, "--config", self.cfg, *args], env=self.env, cwd=self.home,
                                stdin=subprocess.DEVNULL, stdout=stdout, stderr=subprocess.DEVNULL)

    def left(self):
        time.sleep(3)
        n = len(marked(self.marker))
        sweep(self.marker)
        return n


def row_exit(sb, fx, kind):
    r = Run(sb, fx, kind, ["--init-delay-ms", "300"])
    p = r.start("list")
    wait_count(r.marker, r.n)
    p.wait()
    return str(r.left())


def row_signal_call(sig):
    def row(sb, fx, kind):
        r = Run(sb, fx, kind)
        p = r.start("call", "mcp__f__slow", "--arg", "ms=60000")
        wait_count(r.marker, r.n)
        time.sleep(0.3)
        p.send_signal(sig)
        p.wait()
        return str(r.left())
    return row


def row_kill_list(sb, fx, kind):
    r = Run(sb, fx, kind, ["--init-delay-ms", "60000"])
    p = r.start("list")
    wait_count(r.marker, r.n)
    p.kill()
    p.wait()
    return str(r.left())


def row_serve(sig, stream=False):
    def row(sb, fx, kind):
        r = Run(sb, fx, kind)
        p = r.start("serve", "--port", "0", stdout=subprocess.PIPE)
        addr = None
        for line in p.stdout:
            line = line.decode().strip()
            if line.startswith("switchboard is serving on http://"):
                addr = line.split("http://", 1)[1]
                break
        wait_count(r.marker, r.n)
        follower = None
        if stream:
            with open(os.path.join(r.home, "data", "serve-token")) as f:
                token = f.read().strip()
            follower = subprocess.Popen(["curl", "-sN", "-H", f"Authorization: Bearer {token}", f"http://{addr}/api/events"],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.5)
        started = time.time()
        p.send_signal(sig)
        try:
            p.wait(timeout=10)
            took = f" (exit after {time.time() - started:.2f} s)" if stream else ""
        except subprocess.TimeoutExpired:
            took = " (still running after 10 s)"
            p.kill()
            p.wait()
        if follower:
            follower.kill()
        return f"{r.left()}{took}"
    return row


def row_timeout(sb, fx, kind):
    r = Run(sb, fx, kind)
    p = r.start("call", "mcp__f__echo", "--arg", "text=x", "--timeout", "1e20")
    code = p.wait()
    return f"{r.left()} (exit {code})"


ROWS = [
    ("`list` exits normally", row_exit),
    ("SIGINT during `call`", row_signal_call(signal.SIGINT)),
    ("SIGTERM during `call`", row_signal_call(signal.SIGTERM)),
    ("SIGHUP during `call`", row_signal_call(signal.SIGHUP)),
    ("SIGKILL during `list`", row_kill_list),
    ("SIGKILL during `call`", row_signal_call(signal.SIGKILL)),
    ("SIGKILL of `serve`", row_serve(signal.SIGKILL)),
    ("SIGTERM of `serve`", row_serve(signal.SIGTERM)),
    ("SIGTERM of `serve` following /api/events", row_serve(signal.SIGTERM, stream=True)),
    ("`call --timeout 1e20`", row_timeout),
]


def main():
    args = sys.argv[1:]
    before = None
    if "--before" in args:
        i = args.index("--before")
        before = os.path.abspath(args[i + 1])
        del args[i:i + 2]
    sb, fx = (os.path.abspath(a) for a in args)
    bins = [("before", before), ("after", sb)] if before else [("", sb)]
    head = " | ".join(f"{label} plain / hostile".strip() for label, _ in bins)
    print(f"| what ended switchboard | {head} |")
    print("|---|" + "---|" * len(bins))
    for name, row in ROWS:
        cells = [f"{row(b, fx, 'plain')} / {row(b, fx, 'hostile')}" for _, b in bins]
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()

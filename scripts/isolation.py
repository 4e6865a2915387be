#!/usr/bin/env python3
"""The isolation run of issue 10: `switchboard serve` with a healthy server and one that is
killed every 10 s, 8 clients calling both for 60 s (keep-alive HTTP, one thread each), and a
follower on /api/events; then the same with a server flooding notifications and one that hangs
at start-up beside them. Prints, per run: the healthy server's calls and latency (p50, p99), and
for the killed one the failed calls per kill and the time from each kill to its next good call.

    scripts/isolation.py target/release/switchboard target/release/switchboard-fixture [SECONDS]
"""

import http.client
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time


def pids_with(marker):
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if marker.encode() in f.read().split(b"\0"):
                        found.append(int(pid))
            except OSError:
                pass
    return found


def run(sb, fx, seconds, hostile):
    home = tempfile.mkdtemp(prefix="sb-isolation-")
    marker = f"sbkill-{os.getpid()}-{time.time_ns()}"
    servers = {
        "ok": {"command": fx},
        "killed": {"command": fx, "args": ["--marker", marker]},
    }
    if hostile:
        servers["flood"] = {"command": fx, "args": ["--notify-flood"]}
        servers["hung"] = {"command": fx, "args": ["--init-delay-ms", "600000"], "startup_timeout_ms": 600000}
    cfg = os.path.join(home, "c.json")
    with open(cfg, "w") as f:
        json.dump({"servers": servers}, f)
    env = dict(os.environ, SWITCHBOARD_CONFIG=os.path.join(home, "user.json"),
               SWITCHBOARD_DATA_DIR=os.path.join(home, "data"))
    serve = subprocess.Popen([sb, "--config", cfg, "serve", "--port", "0"], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL)
    addr = None
    for line in serve.stdout:
        line = line.decode().strip()
        if line.startswith("switchboard is serving on http://"):
            addr = line.split("http://", 1)[1]
            break
    host, port = addr.split(":")
    with open(os.path.join(home, "data", "serve-token")) as f:
        token = f.read().strip()
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    body = json.dumps({"arguments": {"text": "x"}})

    def connected():
        c = http.client.HTTPConnection(host, int(port), timeout=30)
        c.request("GET", "/api/servers", headers=headers)
        states = {s["name"]: s["status"]["state"] for s in json.loads(c.getresponse().read())["servers"]}
        return states.get("ok") == "connected" and states.get("killed") == "connected" and (
            not hostile or states.get("flood") == "connected")

    while not connected():
        time.sleep(0.1)

    # A follower on the events, as a dashboard is.
    def follow():
        c = http.client.HTTPConnection(host, int(port), timeout=seconds + 30)
        c.request("GET", "/api/events", headers={**headers, "Accept": "text/event-stream"})
        r = c.getresponse()
        try:
            while r.read(65536):
                pass
        except (OSError, http.client.HTTPException):
            pass
    threading.Thread(target=follow, daemon=True).start()

    stop = time.time() + seconds
    calls = []  # (tool, start, latency, ok)
    lock = threading.Lock()

    def client(i):
        c = http.client.HTTPConnection(host, int(port), timeout=60)
        n = 0
        while time.time() < stop:
            tool = "mcp__ok__echo" if n % 2 == 0 else "mcp__killed__echo"
            n += 1
            t0 = time.time()
            try:
                c.request("POST", f"/api/tools/{tool}/call", body=body, headers=headers)
                r = c.getresponse()
                r.read()
                ok = r.status == 200
            except (OSError, http.client.HTTPException):
                ok = False
                c = http.client.HTTPConnection(host, int(port), timeout=60)
            with lock:
                calls.append((tool, t0, time.time() - t0, ok))

    kills = []

    def killer():
        while time.time() + 10 < stop:
            time.sleep(10)
            for pid in pids_with(marker):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            kills.append(time.time())

    threads = [threading.Thread(target=client, args=(i,)) for i in range(8)] + [threading.Thread(target=killer)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    serve.send_signal(signal.SIGTERM)
    try:
        serve.wait(timeout=30)
    except subprocess.TimeoutExpired:
        print("(serve did not stop within 30 s of SIGTERM: killed)")
        serve.kill()
        serve.wait()

    healthy = sorted(l for tool, _, l, ok in calls if tool == "mcp__ok__echo" and ok)
    healthy_failed = sum(1 for tool, _, _, ok in calls if tool == "mcp__ok__echo" and not ok)
    killed = [(t0, l, ok) for tool, t0, l, ok in calls if tool == "mcp__killed__echo"]
    failed = sum(1 for _, _, ok in killed if not ok)
    recover = []
    for k in kills:
        good = [t0 + l for t0, l, ok in killed if ok and t0 >= k]
        if good:
            recover.append(min(good) - k)
    q = lambda p: healthy[min(len(healthy) - 1, int(len(healthy) * p))] * 1000 if healthy else float("nan")
    label = "with a flooding and a hanging server" if hostile else "quiet"
    print(f"{label}: healthy {len(healthy)} calls ({healthy_failed} failed), p50 {q(0.5):.2f} ms, p99 {q(0.99):.2f} ms; "
          f"killed server: {len(kills)} kills, {failed} failed calls ({failed / max(1, len(kills)):.1f} per kill), "
          f"first good call {statistics.median(recover) * 1000:.0f} ms after a kill (median)" if recover else
          f"{label}: no recovery measured", flush=True)


def main():
    sb, fx = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    seconds = int(sys.argv[3]) if len(sys.argv) > 3 else 60
    run(sb, fx, seconds, hostile=False)
    run(sb, fx, seconds, hostile=True)


if __name__ == "__main__":
    main()

"""A fleet's folder written as its listeners would have left it, for the
report's browser test: three machines, a few hundred finished jobs of
every outcome with their job files in archive/done/, refused files with
their reason notes, queued jobs, heartbeats (one listener silent for a
while, one that restarted after losing a job), and a result that does not
verify. Every document is signed with the fleet key as docs/protocol.md
says, by this file's own HMAC (Python's standard library), not by the
program under test.

`write(root, key, hostile=False)` writes it and returns a manifest of what
was written: per machine the count per colour of the page, and the jobs
that did not end well. With `hostile`, every text a folder writer or a
sender controls holds markup and script.
"""

import datetime
import hashlib
import hmac
import json
import os
import random
import time
from pathlib import Path

MACHINES = ["PC", "NAS", "LAPTOP"]
JOBS_PER_MACHINE = 120

# Each ending: its share, the result's error field, ok, and the page's colour.
ENDINGS = [
    ("done", 0.55, "", True, "done"),
    ("failed", 0.14, "", False, "failed"),
    ("cancelled", 0.08, "cancelled", False, "cancelled"),
    ("cancelled-before-start", 0.04, "cancelled-before-start", False, "cancelled"),
    ("timeout", 0.07, "timeout", False, "timeout"),
    ("interrupted", 0.04, "interrupted", False, "interrupted"),
    ("spawn-failed", 0.05, "spawn-failed", False, "failed"),
    ("dependency-failed", 0.03, "dependency-failed", False, "cancelled"),
]

EVIL = ("<script>document.title='pwned';window.pwned=1</script>"
        "<img src=x onerror=\"document.body.dataset.pwned=1\">"
        "\"><svg onload=alert(1)><b>bold</b>&amp;'")


def ts(t):
    d = datetime.datetime.fromtimestamp(t, datetime.timezone.utc)
    return d.strftime("%Y-%m-%dT%H:%M:%S.") + f"{d.microsecond // 1000:03d}Z"


def sign(key, canonical):
    return hmac.new(key, canonical.encode(), hashlib.sha256).hexdigest()


def put(path, doc, mtime):
    path.parent.mkdir(parents=True, exist_ok=True)
    data = doc if isinstance(doc, bytes) else (json.dumps(doc, indent=2) + "\n").encode()
    path.write_bytes(data)
    os.utime(path, (mtime, mtime))


def job_doc(key, jid, target, created, spec):
    text = json.dumps(spec, separators=(",", ":"))
    return {"v": 1, "jobId": jid, "target": target, "createdAt": created, "origin": "LAPTOP",
            "spec": text, "sig": sign(key, f"job|{jid}|{target}|{created}|LAPTOP|{text}")}


def result_doc(key, jid, target, ok, code, error, started, finished, detail):
    d = json.dumps(detail, separators=(",", ":"), sort_keys=True)
    canon = f"result|{jid}|{target}|{'true' if ok else 'false'}|{code}|{error}|{started}|{finished}|{d}"
    return {"v": 1, "jobId": jid, "target": target, "ok": ok, "exitCode": code, "error": error,
            "startedAt": started, "finishedAt": finished, "detail": d, "sig": sign(key, canon)}


def beat_doc(key, target, state, started, at, host, version):
    b = {"target": target, "pid": 4242, "state": state, "running": None, "runningJobs": [],
         "startedAt": started, "heartbeatAt": at, "pollIntervalMs": 2000, "version": version,
         "host": host, "instance": "inst-" + target.lower(), "keyFingerprint": "", "run": "run1"}
    canon = "|".join(["heartbeat", target, b["instance"], b["run"], str(b["pid"]), state, "", "",
                      started, at, str(b["pollIntervalMs"]), version, "", host])
    b["sig"] = sign(key, canon)
    return b


def write(root, key, hostile=False, now=None, seed=7):
    rng = random.Random(seed)
    now = time.time() if now is None else now
    root = Path(root)
    start = now - 12 * 3600
    manifest = {"machines": {}, "not_well": 0, "unverified": 0}
    serial = 0

    def new_id(t):
        nonlocal serial
        serial += 1
        return time.strftime("%Y%m%d-%H%M%S", time.gmtime(t)) + f"-{serial:016x}"

    for m in MACHINES:
        t_dir = root / m
        for sub in ["inbox", "cancel", "running", "results", "logs", "archive/done",
                    "archive/consumed", "archive/rejected"]:
            (t_dir / sub).mkdir(parents=True, exist_ok=True)
        counts = {c: 0 for c in ["done", "failed", "cancelled", "timeout", "interrupted", "rejected"]}
        # Every ending at least once, the rest by share.
        endings = [e for e in ENDINGS] + rng.choices(
            ENDINGS, weights=[e[1] for e in ENDINGS], k=JOBS_PER_MACHINE - len(ENDINGS))
        rng.shuffle(endings)
        # Jobs arrive at random and run one at a time: a burst queues up.
        arrive = start + rng.uniform(0, 300)
        free = arrive
        for i, (word, _, error, ok, colour) in enumerate(endings):
            arrive += rng.expovariate(1 / 200)
            jid = new_id(arrive)
            created = arrive
            run = rng.uniform(5, 300)
            never = word in ("cancelled-before-start", "dependency-failed", "spawn-failed")
            begin = max(created, free) + rng.uniform(0.5, 5)
            started = None if word in ("cancelled-before-start", "dependency-failed") else begin
            finished = begin + (0.05 if never else run)
            free = finished
            label = EVIL if hostile else f"{m.lower()} task {i}"
            argv = ["sh", "-c", EVIL] if hostile else ["make", f"target-{i}"]
            stderr = (EVIL if hostile else f"error: step {i} went wrong\nmore detail\n")
            detail = {"durationMs": 0 if never else int(run * 1000), "label": label}
            code = -1
            if word == "done":
                code = 0
                detail["stdoutTail"] = "ok\n"
            elif word == "failed":
                code = rng.choice([1, 2, 3, 127])
                detail["stderrTail"] = stderr
            elif word == "cancelled":
                detail.update(marker={"createdAt": ts(finished - 1), "origin": "LAPTOP"},
                              signal="SIGTERM", stderrTail=stderr)
            elif word == "cancelled-before-start":
                detail.update(marker={"createdAt": ts(finished - 1), "origin": "LAPTOP"})
            elif word == "timeout":
                detail.update(signal="SIGKILL", graceExpired=True, stderrTail=stderr)
            elif word == "interrupted":
                detail.update(signal="SIGTERM", stderrTail=stderr)
            elif word == "spawn-failed":
                detail.update(spawnError=(EVIL if hostile else "No such file or directory (os error 2)"))
            elif word == "dependency-failed":
                detail.update(dependency={"ended": "failed (exit 3)", "jobId": "dep-1", "target": m})
            spec = {"argv": argv, "label": label}
            put(t_dir / "archive/done" / f"{jid}.json",
                job_doc(key, jid, m, ts(created), spec), finished)
            put(t_dir / "results" / f"{jid}.json",
                result_doc(key, jid, m, ok, code, error, ts(started) if started else "",
                           ts(finished), detail), finished)
            counts[colour] += 1
            manifest["not_well"] += word != "done"
        t = free + 30
        # NAS: its listener died while a job ran, and came back 40 minutes
        # later to record it interrupted: a gap; then it went silent again.
        if m == "NAS":
            jid = new_id(t)
            s = t + 5
            back = s + 40 * 60
            detail = {"note": "the listener stopped while this job ran; it is not run again",
                      "recovered": True, "label": EVIL if hostile else "long import"}
            put(t_dir / "archive/done" / f"{jid}.json",
                job_doc(key, jid, m, ts(t), {"argv": ["import"], "label": detail["label"]}), back)
            put(t_dir / "results" / f"{jid}.json",
                result_doc(key, jid, m, False, -1, "interrupted", ts(s), ts(back), detail), back)
            counts["interrupted"] += 1
            manifest["not_well"] += 1
            put(t_dir / "listener.json",
                beat_doc(key, m, "listening", ts(back), ts(back + 600),
                         EVIL if hostile else "nas.lan", "1.0.0"), back + 600)
        else:
            put(t_dir / "listener.json",
                beat_doc(key, m, "listening", ts(start), ts(now - 10),
                         EVIL if hostile else f"{m.lower()}.lan", EVIL if hostile else "1.0.0"), now - 10)
        # Refused files, with the listener's reason notes.
        for k in range(2):
            at = start + 3600 * (k + 1)
            name = (f"{EVIL}-{k}.json" if hostile else f"{new_id(at)}.json").replace("/", "_")
            put(t_dir / "archive/rejected" / name, b"{ not json", at)
            put(t_dir / "archive/rejected" / f"{name}.reason.json",
                {"verdict": EVIL if hostile else "bad-signature",
                 "message": EVIL if hostile else "the signature does not verify with this fleet key",
                 "rejectedAt": ts(at), "kind": "job", "target": m}, at)
            counts["rejected"] += 1
            manifest["not_well"] += 1
        # Queued jobs waiting now.
        for k in range(3 if m == "PC" else 0):
            created = now - 600 + k * 60
            jid = new_id(created)
            put(t_dir / "inbox" / f"{jid}.json",
                job_doc(key, jid, m, ts(created), {"argv": ["sleep", "1"]}), created)
        # LAPTOP: a result whose signature does not hold.
        if m == "LAPTOP":
            jid = new_id(now - 100)
            forged = result_doc(key, jid, m, True, 0, "", ts(now - 200), ts(now - 100), {"label": EVIL})
            forged["sig"] = "0" * 64
            put(t_dir / "results" / f"{jid}.json", forged, now - 100)
            manifest["unverified"] += 1
        manifest["machines"][m] = counts
    return manifest


if __name__ == "__main__":
    import sys
    key = Path(sys.argv[2]).read_bytes().rstrip(b" \t\r\n\f\v")
    print(json.dumps(write(sys.argv[1], key, hostile="--hostile" in sys.argv)))

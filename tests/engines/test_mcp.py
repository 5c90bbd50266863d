"""`fleet-dispatch mcp` driven by the official MCP Python SDK's stdio
client, against a real root, key and listener: the handshake, the tools,
a job dispatched and its result waited for (with progress), a message in
both delivery modes, and a parent
job that runs an MCP client itself (tests/engines/parent_job.py), which
dispatches a child, stops it (`stopped`, then `not_running`) and is refused
(`FORBIDDEN`, nothing written) for a job that is not its child.

Run by ci/engines: `python test_mcp.py PATH/TO/fleet-dispatch`. Plain
asyncio, no test framework: each `test_*` runs in turn, and any failure
ends the run with status 1.
"""

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

HERE = Path(__file__).resolve().parent
BIN = os.path.abspath(sys.argv[1])
LIMIT = 30.0


class World:
    """A root with targets PC (served by a listener with two slots) and
    LAPTOP (no listener), a fresh key, and the environment that names them."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.root = tmp / "root"
        for target in ("PC", "LAPTOP"):
            (self.root / target / "inbox").mkdir(parents=True)
            (self.root / target / "cancel").mkdir(parents=True)
        (tmp / "home").mkdir()
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(tmp / "home"),
            "FLEET_DISPATCH_ROOT": str(self.root),
            "FLEET_DISPATCH_KEY_FILE": str(tmp / "keys" / "fleet.key"),
            "FLEET_DISPATCH_STATE_DIR": str(tmp / "state"),
            "FLEET_DISPATCH_MACHINE": "PC",
        }
        self.run("keygen")
        self.listener = None

    def run(self, *args: str) -> str:
        done = subprocess.run(
            [BIN, *args], env=self.env, capture_output=True, text=True, timeout=LIMIT
        )
        assert done.returncode == 0, f"{args}: {done.stdout}{done.stderr}"
        return done.stdout.strip()

    def listen(self):
        beat = self.root / "PC" / "listener.json"
        self.listener = subprocess.Popen(
            [BIN, "listen", "--poll-interval", "100ms", "--slots", "2"],
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        until = time.monotonic() + LIMIT
        while not beat.exists():
            assert time.monotonic() < until, "the listener never wrote its heartbeat"
            time.sleep(0.05)

    def stop(self):
        if self.listener is not None:
            self.listener.terminate()
            self.listener.wait(LIMIT)

    def server(self) -> StdioServerParameters:
        return StdioServerParameters(command=BIN, args=["mcp"], env=self.env)


async def test_handshake_and_tools(w: World):
    async with stdio_client(w.server()) as (read, write):
        async with ClientSession(read, write) as s:
            init = await s.initialize()
            assert init.protocol_version == "2025-11-25", init.protocol_version
            assert "message_job" in init.instructions and "stop_job" in init.instructions
            tools = {t.name: t for t in (await s.list_tools()).tools}
            assert sorted(tools) == sorted(
                ["dispatch_job", "job_status", "job_result", "job_logs",
                 "stop_job", "message_job", "list_jobs"]
            ), sorted(tools)
            for name in ("stop_job", "message_job"):
                d = tools[name].description
                assert 'delivery_mode "interrupt"' in d and "-> stop_job" in d, d
            assert tools["dispatch_job"].input_schema["required"] == ["target", "argv"]
            seal = tools["dispatch_job"].input_schema["properties"]["seal"]
            assert seal["type"] == "boolean" and seal["default"] is False, seal


async def test_dispatch_and_wait_for_a_result(w: World):
    seen = []

    async def progress(done, total, message):
        seen.append((done, total, message))

    async with stdio_client(w.server()) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            sent = await s.call_tool(
                "dispatch_job",
                {"target": "PC", "argv": ["sh", "-c", "sleep 1.5; echo engine"], "label": "e"},
            )
            assert not sent.is_error, sent
            job = sent.structured_content
            assert job["status"] == "queued", job
            got = await s.call_tool(
                "job_result",
                {"target": "PC", "job_id": job["job_id"], "wait_seconds": LIMIT},
                progress_callback=progress,
            )
            assert not got.is_error, got
            r = got.structured_content
            assert r["finished"] and r["ok"] and r["outcome"] == "done", r
            assert r["detail"]["stdoutTail"] == "engine\n", r
            assert seen and seen[0][1] == LIMIT, seen
            logs = await s.call_tool("job_logs", {"target": "PC", "job_id": job["job_id"]})
            assert logs.structured_content["stdout"] == "engine\n", logs


async def test_message_job_in_both_modes(w: World):
    async with stdio_client(w.server()) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()

            async def call(name, args):
                r = await s.call_tool(name, args)
                assert not r.is_error, r
                return r.structured_content

            old = (await call("dispatch_job", {"target": "PC", "argv": ["sleep", "60"]}))["job_id"]
            for _ in range(300):
                if (await call("job_status", {"target": "PC", "job_id": old}))["state"] == "running":
                    break
                await asyncio.sleep(0.1)
            queued = await call("message_job", {"target": "PC", "job_id": old, "argv": ["true"]})
            assert queued["delivery"] == "queued", queued
            sent = await call("message_job", {"target": "PC", "job_id": old, "argv": ["true"],
                                              "delivery_mode": "interrupt"})
            assert sent["delivery"] == "sent", sent
            ended = await call("job_result", {"target": "PC", "job_id": old, "wait_seconds": LIMIT})
            assert ended["outcome"] == "cancelled", ended
            for new in (sent, queued):
                r = await call("job_result", {"target": "PC", "job_id": new["job_id"], "wait_seconds": LIMIT})
                assert r["ok"], r


async def test_a_parent_job_stops_its_child_and_only_its_child(w: World):
    other = w.run("enqueue", "--target", "LAPTOP", "--", "true")
    report = w.tmp / "parent.json"
    parent = w.run(
        "enqueue", "--target", "PC", "--timeout", "2m", "--",
        sys.executable, str(HERE / "parent_job.py"), BIN, str(report), other,
    )
    async with stdio_client(w.server()) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            got = await s.call_tool(
                "job_result", {"target": "PC", "job_id": parent, "wait_seconds": 90}
            )
            r = got.structured_content
            assert r.get("ok"), f"the parent job failed: {r}"
    seen = json.loads(report.read_text())
    child = seen["child"]
    assert child["parent_job_id"] == parent, child
    assert seen["child_state"] == "running", seen
    for refused in ("other", "self"):
        assert seen[refused]["is_error"], seen[refused]
        assert seen[refused]["content"]["error"]["code"] == "FORBIDDEN", seen[refused]
    assert seen["stop"]["status"] == "stopped", seen
    assert seen["child_result"]["outcome"] == "cancelled", seen
    assert seen["stop_again"]["status"] == "not_running", seen
    # The job that is not its child is untouched: no marker for it.
    assert not list((w.root / "LAPTOP" / "cancel").iterdir())
    assert (w.root / "LAPTOP" / "inbox" / f"{other}.json").exists()


def main() -> int:
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        w = World(Path(tmp))
        w.listen()
        try:
            for name, test in list(globals().items()):
                if not name.startswith("test_"):
                    continue
                started = time.monotonic()
                try:
                    asyncio.run(asyncio.wait_for(test(w), 120))
                    print(f"ok   {name} ({time.monotonic() - started:.1f}s)")
                except BaseException:
                    failed += 1
                    print(f"FAIL {name}")
                    traceback.print_exc()
        finally:
            w.stop()
    print(f"engines: {failed} failed" if failed else "engines: all passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""A job that runs an MCP client of its own (tests/engines/test_mcp.py
starts it through the listener): as its child it dispatches a job, waits
until it runs, tries to stop a job that is not its child and itself (both
must be refused), stops the child, waits for its end and stops it again.
What each call answered is written as JSON to the file argv[2] names.

`python parent_job.py FLEET_DISPATCH_BIN REPORT OTHER_JOB_ID`
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

BIN, REPORT, OTHER = sys.argv[1:4]


async def main():
    # The server inherits what the listener gave this job: its id, the
    # root, the key file. Nothing here names the caller.
    env = {k: v for k, v in os.environ.items() if k.startswith("FLEET_DISPATCH_") or k in ("PATH", "HOME")}
    target = os.environ["FLEET_DISPATCH_TARGET"]
    seen = {}

    def answer(r):
        return {"is_error": r.is_error, "content": r.structured_content}

    async with stdio_client(StdioServerParameters(command=BIN, args=["mcp"], env=env)) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            sent = await s.call_tool("dispatch_job", {"target": target, "argv": ["sleep", "60"]})
            child = sent.structured_content
            seen["child"] = child
            state = None
            for _ in range(300):
                st = await s.call_tool("job_status", {"target": target, "job_id": child["job_id"]})
                state = st.structured_content["state"]
                if state == "running":
                    break
                await asyncio.sleep(0.1)
            seen["child_state"] = state
            # A field naming another caller is ignored, never obeyed.
            seen["other"] = answer(await s.call_tool(
                "stop_job", {"target": "LAPTOP", "job_id": OTHER, "caller": "none", "parent_job_id": OTHER}))
            seen["self"] = answer(await s.call_tool(
                "stop_job", {"target": target, "job_id": os.environ["FLEET_DISPATCH_JOB_ID"]}))
            seen["stop"] = (await s.call_tool("stop_job", {"target": target, "job_id": child["job_id"]})).structured_content
            got = await s.call_tool("job_result", {"target": target, "job_id": child["job_id"], "wait_seconds": 60})
            seen["child_result"] = got.structured_content
            seen["stop_again"] = (await s.call_tool("stop_job", {"target": target, "job_id": child["job_id"]})).structured_content
    with open(REPORT, "w") as f:
        json.dump(seen, f)


asyncio.run(main())

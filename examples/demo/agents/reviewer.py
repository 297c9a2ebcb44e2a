#!/usr/bin/env python3
"""Scripted demo agent "reviewer" (roles: spec_reviewer, task_reviewer).

spec_reviewer: one critical finding (REQ-003, design.md "4. Persistence") while design.md has no
"## Persistence" section, decided from the file content; otherwise converged with no findings.
task_reviewer: approves, except T002 when app.js does not mention localStorage.
The answer is prose with a fenced ```json envelope, as a chat model would write it.

DEMO_REVIEWER_MODE=garbage: print non-JSON prose instead (exit 0), to exercise the
"unparseable output" path.
DEMO_REVIEWER_MODE=repeat (the stall example): spec_reviewer always raises the same critical
finding (which theme wins against prefers-color-scheme), whatever the documents say.
"""
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import demo_agents  # noqa: E402

if __name__ == "__main__":
    request = demo_agents.read_request()
    if os.environ.get("DEMO_REVIEWER_MODE") == "garbage":
        sys.stdout.write("I looked at it and it is fine.\n")
        sys.stdout.flush()
        sys.exit(0)
    demo_agents.dispatch(request)

#!/usr/bin/env python3
"""Scripted demo agent "implementer" (roles: impl_ui, impl_backend, impl_test).

By task.id: T001 adds the toggle button to index.html and the dark palette to style.css
(idempotent), T002 rewrites app.js with the toggle + localStorage logic, T003 writes
tests/check-theme.js. Any other task id answers status "blocked".

Test hooks (environment, passed through the agent's configured `env`):
  DEMO_SLOW_TASK=<id> and DEMO_MARKER=<file>: if the marker does not exist, create it, then
      sleep 60 s before working on that task; if it exists, proceed at once.
  DEMO_IMPL_MODE=garbage-exit: print garbage and exit with code 3 without touching files.
"""
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import demo_agents  # noqa: E402

if __name__ == "__main__":
    request = demo_agents.read_request()
    if os.environ.get("DEMO_IMPL_MODE") == "garbage-exit":
        sys.stdout.write("%%% implementer crashed: segmentation fault (core dumped) %%%\n")
        sys.stdout.flush()
        sys.exit(3)
    demo_agents.dispatch(request)

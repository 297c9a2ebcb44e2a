"""Shared logic of the scripted demo agents (python3 standard library only).

Each entry script (author.py, reviewer.py, implementer.py) reads ONE JSON request from stdin
(docs/cli.md, Agents of kind `command`) and dispatches on the request's `role`, so that an agent that was swapped in as the
"opposite" during arbitration still answers sensibly. Behaviour depends only on request fields
(role, phase, round, task.id, spec_dir, workdir) and on the files in the working directory, never
on the prompt text (the one exception: the e2e_runner's rubric scorer reads the criteria and the
screenshot paths from its prompt's lines). Every writer is deterministic and idempotent.
"""

import json
import os
import re
import sys

# ---------------------------------------------------------------------------------------------
# request / reply plumbing
# ---------------------------------------------------------------------------------------------


def read_request():
    raw = sys.stdin.read()
    try:
        req = json.loads(raw)
    except ValueError as exc:
        sys.stderr.write("demo agent: stdin is not a JSON request: %s\n" % exc)
        sys.exit(2)
    if not isinstance(req, dict):
        sys.stderr.write("demo agent: the request must be a JSON object\n")
        sys.exit(2)
    return req


def workdir_of(req):
    return os.path.abspath(req.get("workdir") or os.getcwd())


def spec_dir_of(req):
    return os.path.join(workdir_of(req), req.get("spec_dir") or ".specs/demo")


def task_id_of(req):
    task = req.get("task")
    if isinstance(task, dict):
        return str(task.get("id") or "")
    return ""


def report(status, summary, output="", usage=None):
    """Print a JSON report (docs/cli.md) and flush."""
    body = {
        "status": status,
        "summary": summary,
        "output": output,
        "usage": usage or {"input_tokens": 0, "output_tokens": 0, "usd": 0.0},
    }
    sys.stdout.write(json.dumps(body, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def envelope_reply(intro, envelope):
    """Print a review envelope the way a chat model would: prose plus a fenced json block."""
    text = json.dumps(envelope, indent=2, ensure_ascii=False)
    sys.stdout.write(intro.rstrip() + "\n\n```json\n" + text + "\n```\n")
    sys.stdout.flush()


def write_file(path, content):
    """Write text with LF endings, only if it differs (keeps mtimes stable on re-runs)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    try:
        with open(path, "r", encoding="utf-8", newline="") as fh:
            if fh.read() == content:
                return False
    except OSError:
        pass
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        fh.write(content)
    return True


def read_text(path):
    try:
        with open(path, "r", encoding="utf-8") as fh:
            return fh.read()
    except OSError:
        return None


# ---------------------------------------------------------------------------------------------
# spec_author: the four documents (docs/spec-format.md)
# ---------------------------------------------------------------------------------------------

REQUIREMENT_MD = """\
# Requirements: Add a dark mode toggle

## Overview

The Notes page (`index.html`) always renders dark text on a white background. This feature adds a
button to the page header that switches the page between a light and a dark colour scheme, and
the page remembers the choice across reloads.

## Functional requirements

- [REQ-001] The page header contains a button with the id `theme-toggle` and the accessible label "Toggle dark mode".
- [REQ-002] Clicking the `theme-toggle` button switches the `data-theme` attribute of the `<html>` element between `light` and `dark`; the dark palette applies while the value is `dark`.
- [REQ-003] The chosen theme is stored in `localStorage` and restored when the page is loaded again.

## Non-functional requirements

- [NFR-001] No external dependencies: `index.html` loads no script or stylesheet from another origin, and `package.json` gains no dependencies.

## Constraints

- [CON-001] The app stays a set of static files (`index.html`, `style.css`, `app.js`) served by the zero-dependency `server.js`; there is no build step.

## Assumptions

- [ASM-001] The theme is light when nothing is stored. When `localStorage` is unavailable (private browsing, storage disabled or full), the toggle still switches the theme for the current page view and nothing is persisted.

## Glossary

- **Theme**: the value of the `data-theme` attribute on `<html>`, either `light` or `dark`.
- **Dark palette**: the CSS custom property values set by the `[data-theme="dark"]` rule in `style.css`.
"""

DESIGN_HEAD = """\
# Design: Add a dark mode toggle

## Overview

The feature is front-end work on the static files named in CON-001. The markup gains a button,
the stylesheet gains a dark palette selected by `data-theme`, and `app.js` wires the button and
remembers the choice. The default theme follows ASM-001.

## Traceability Matrix

| Req ID | Requirement | Design Component |
|---|---|---|
| REQ-001 | Theme toggle button in the header | `index.html`: `<button id="theme-toggle">` inside `header.site-header` |
| REQ-002 | Clicking switches `data-theme` on `<html>` | `app.js`: click handler flips `document.documentElement.dataset.theme`; `style.css`: `[data-theme="dark"]` palette |
| REQ-003 | The choice persists across reloads | `app.js`: reads `localStorage` on load, writes it on each click |
| NFR-001 | No external dependencies | Only same-origin `style.css` and `app.js`; checked by `tests/check-theme.js --no-external` |

## Architecture

- `index.html`: the header gets `<button id="theme-toggle" type="button" aria-label="Toggle dark mode">` next to the title.
- `style.css`: the palette is a set of CSS custom properties on `:root`; a `[data-theme="dark"]` rule overrides them, so no other rule changes.
- `app.js`: on load it applies the stored theme (or `light`), then flips the theme on each click and sets `aria-pressed` on the button.
- `tests/check-theme.js`: a Node script without dependencies that checks the markers in the three files and runs `app.js` against a minimal fake DOM.
"""

DESIGN_PERSISTENCE = """
## Persistence

The theme is stored under the `localStorage` key `notes-theme`, with the value `light` or `dark`
(REQ-003). On load `app.js` reads the key; a missing key, any other value, or an exception thrown
by storage all mean `light`. Each click writes the new value. Reads and writes are wrapped in
`try`/`catch`: when storage is unavailable or full (ASM-001), the toggle keeps switching the theme
for the current page view and nothing is persisted. No cookie and no server request are involved,
so NFR-001 holds.
"""

DESIGN_TAIL = """
## Work plan

- T001 adds the button and the dark palette (REQ-001, REQ-002).
- T002 adds the toggle and persistence logic to `app.js` (REQ-002, REQ-003).
- T003 adds `tests/check-theme.js`, which acceptance cases T-A02 and T-A04 run.

## Verification

- T-A01 and T-A03 are file checks on `index.html` and `app.js`.
- T-A02 runs `node tests/check-theme.js`, which clicks the button in a fake DOM and checks the stored value.
- T-A04 runs `node tests/check-theme.js --no-external`, which rejects any script, stylesheet or import from another origin.
- T-A05 starts the app (`node server.js`) and clicks the toggle in Chromium, then reloads; its steps are in `test.steps.json`.

## Decisions

- The theme lives on `<html>` as `data-theme`, so one attribute selector switches the whole palette without extra classes.
- The dark palette only overrides custom properties; the rest of `style.css` is unchanged.
"""

TASKS_MD = """\
# Tasks: Add a dark mode toggle

## Phase 1: Markup and styles
- [ ] T001: Add the theme toggle button and the dark palette
  - kind: ui
  - requirements: REQ-001, REQ-002
  - depends: none
  - files: index.html, style.css
  - done: `index.html` has the `theme-toggle` button in the header and `style.css` has a `[data-theme="dark"]` rule overriding the palette

## Phase 2: Behaviour
- [ ] T002: Toggle the theme and remember the choice
  - kind: backend
  - requirements: REQ-002, REQ-003
  - depends: T001
  - files: app.js
  - done: a click flips `data-theme` on `<html>` between `light` and `dark`, the value is stored under `notes-theme` in `localStorage` and restored on load, and storage errors do not break the toggle

## Phase 3: Checks
- [ ] T003: Add the theme check script
  - kind: test
  - requirements: REQ-001, REQ-002, REQ-003, NFR-001
  - depends: T002
  - files: tests/check-theme.js
  - done: `node tests/check-theme.js` prints `OK` and exits 0 when the markers and the behaviour hold, else lists what is missing and exits 1; with `--no-external` it checks that nothing is loaded from another origin
"""

TEST_MD = """\
# Acceptance tests: Add a dark mode toggle

## T-A01: [REQ-001] The header has the theme toggle
- Steps: open `index.html` and look at the header
- Expected: a button with the id `theme-toggle` is in the header
- Verify: file-check
- File: index.html
- Contains: id="theme-toggle"

## T-A02: [REQ-002] Clicking the toggle switches the theme
- Steps: run the check script; it loads `app.js` in a fake DOM and clicks the toggle twice
- Expected: `data-theme` goes from `light` to `dark` and back, and the script prints OK
- Verify: command
- Command: `node tests/check-theme.js`
- Exit: 0
- Output contains: OK
- Timeout: 60

## T-A03: [REQ-003] The choice is stored in localStorage
- Steps: open `app.js`
- Expected: the theme is read from and written to `localStorage`
- Verify: file-check
- File: app.js
- Contains: localStorage

## T-A04: [NFR-001] No external dependencies
- Steps: run the check script with `--no-external`
- Expected: no script, stylesheet or import comes from another origin and `package.json` has no dependencies; the script prints OK
- Verify: command
- Command: `node tests/check-theme.js --no-external`
- Exit: 0
- Output contains: OK
- Timeout: 60

## T-A05: [REQ-002] The toggle switches the page to dark mode in a real browser
- Steps: open the page and check that the header shows the title and the toggle; take a screenshot; click the toggle; check that `<html>` has `data-theme="dark"` and the toggle reports pressed; take a screenshot; reload the page and check that it is still dark (REQ-003); take a screenshot
- Expected: after the click the page uses the dark palette and the toggle is pressed; after the reload the page is still dark
- Verify: playwright
"""


def design_md(with_persistence):
    return DESIGN_HEAD + (DESIGN_PERSISTENCE if with_persistence else "") + DESIGN_TAIL


def spec_round(req):
    try:
        return int(req.get("round") or 1)
    except (TypeError, ValueError):
        return 1


def author_spec(req):
    rnd = spec_round(req)
    target = spec_dir_of(req)
    # Deliberate flaw for the review loop: the first draft has no "## Persistence" section.
    with_persistence = rnd >= 2
    docs = {
        "requirement.md": REQUIREMENT_MD,
        "design.md": design_md(with_persistence),
        "tasks.md": TASKS_MD,
        "test.md": TEST_MD,
    }
    for name, text in docs.items():
        write_file(os.path.join(target, name), text)
    rel = os.path.relpath(target, workdir_of(req))
    if rnd >= 2:
        summary = "Revised the spec (round %d): design.md now has a Persistence section" % rnd
    else:
        summary = "Wrote requirement.md, design.md, tasks.md and test.md"
    report(
        "done",
        summary,
        output={"spec_dir": rel, "documents": sorted(docs)},
        usage={"input_tokens": 1200, "output_tokens": 800, "usd": 0.0},
    )


# ---------------------------------------------------------------------------------------------
# reviewers
# ---------------------------------------------------------------------------------------------

PERSISTENCE_HEADING = re.compile(r"^##\s+(?:\d+(?:\.\d+)*\.?\s*)?Persistence\s*$", re.MULTILINE | re.IGNORECASE)

PERSISTENCE_FINDING = {
    "id": "F1",
    "requirement_id": "REQ-003",
    "severity": "critical",
    "file": "design.md",
    "section": "4. Persistence",
    "gist": "The design never says where the theme choice is stored or what happens when storage is unavailable",
    "argument": (
        "REQ-003 requires the theme to survive a reload, but design.md only says that app.js reads "
        "and writes localStorage. It names no key, no accepted values and no behaviour when "
        "localStorage throws (private browsing, storage disabled or full), which ASM-001 explicitly "
        "anticipates. Two implementers could pick different keys, and an unguarded access would "
        "break the toggle entirely when storage is unavailable."
    ),
    "suggestion": "Add a Persistence section naming the localStorage key and the fallback",
}


# DEMO_REVIEWER_MODE=repeat (the "stall" example): whoever reviews the spec keeps raising this
# one finding, round after round, because the scripted author never addresses it. The loop has no
# round cap; stall signal S1 (the same fingerprint three rounds running) is what ends it.
SYSTEM_THEME_FINDING = {
    "id": "F1",
    "requirement_id": "REQ-002",
    "severity": "critical",
    "file": "design.md",
    "section": "Architecture",
    "gist": "The design never says which theme wins when the stored choice and the system's prefers-color-scheme disagree",
    "argument": (
        "The issue asks for the page to follow the system theme, but design.md only reads the "
        "stored choice. When a user picked light and the system switches to dark (or back), the "
        "behaviour is undefined, and the acceptance cases do not exercise it."
    ),
    "suggestion": "Define the precedence (stored choice over system setting, or the reverse) and add a case for it",
}


def reviewer_mode():
    return os.environ.get("DEMO_REVIEWER_MODE", "")


def review_spec(req):
    if reviewer_mode() == "repeat":
        envelope_reply(
            "I reviewed the four documents (round %s). The system-theme question is still open:" % req.get("round"),
            {"findings": [SYSTEM_THEME_FINDING], "converged": False, "remaining_disputes": ["F1"]},
        )
        return
    design = read_text(os.path.join(spec_dir_of(req), "design.md"))
    if design is None or not PERSISTENCE_HEADING.search(design):
        envelope = {"findings": [PERSISTENCE_FINDING], "converged": False, "remaining_disputes": ["F1"]}
        envelope_reply(
            "I reviewed requirement.md, design.md, tasks.md and test.md. The matrix and the tasks "
            "line up, but persistence is underspecified:",
            envelope,
        )
    else:
        envelope = {"findings": [], "converged": True, "remaining_disputes": []}
        envelope_reply(
            "I reviewed the four documents again. The Persistence section names the key and the "
            "fallback; I have no further findings.",
            envelope,
        )


def review_task(req):
    tid = task_id_of(req)
    findings = []
    if tid == "T002":
        app_js = read_text(os.path.join(workdir_of(req), "app.js")) or ""
        if "localStorage" not in app_js:
            findings.append({
                "id": "F1",
                "requirement_id": "REQ-003",
                "severity": "critical",
                "file": "app.js",
                "section": "persistence",
                "gist": "app.js never stores the theme in localStorage, so the choice is lost on reload",
                "argument": "T002 must persist the theme under the notes-theme key (REQ-003); the diff does not touch localStorage.",
                "suggestion": "Read notes-theme from localStorage on load and write it on every click, inside try/catch",
            })
    if findings:
        envelope_reply("I reviewed the diff of %s. One blocking problem:" % tid,
                       {"findings": findings, "converged": False, "remaining_disputes": ["F1"]})
    else:
        envelope_reply("I reviewed the diff of %s. It does what the task says; approved." % (tid or "the task"),
                       {"findings": [], "converged": True, "remaining_disputes": []})


# ---------------------------------------------------------------------------------------------
# implementers
# ---------------------------------------------------------------------------------------------

TOGGLE_BUTTON = '<button id="theme-toggle" type="button" aria-label="Toggle dark mode">\U0001F319</button>'

DARK_CSS = """
/* Dark theme (T001): overrides the palette while <html data-theme="dark">. */
[data-theme="dark"] {
  --bg: #0d1117;
  --fg: #e6edf3;
  --accent: #58a6ff;
  --card: #161b22;
  color-scheme: dark;
}

#theme-toggle {
  font-size: 1.25rem;
  line-height: 1;
  padding: 0.35rem 0.6rem;
  border: 1px solid var(--accent);
  border-radius: 6px;
  background: var(--card);
  color: var(--fg);
  cursor: pointer;
}
"""

APP_JS = """\
// Notes: note counter and the light/dark theme toggle (T002).
(function () {
  'use strict';

  var STORAGE_KEY = 'notes-theme';
  var root = document.documentElement;

  // Storage may be unavailable (private browsing, disabled, full): fall back to light.
  function readStoredTheme() {
    try {
      return window.localStorage.getItem(STORAGE_KEY) === 'dark' ? 'dark' : 'light';
    } catch (err) {
      return 'light';
    }
  }

  function storeTheme(theme) {
    try {
      window.localStorage.setItem(STORAGE_KEY, theme);
    } catch (err) {
      // Not persisted; the theme still applies to this page view.
    }
  }

  function applyTheme(theme) {
    root.dataset.theme = theme;
    var button = document.getElementById('theme-toggle');
    if (button) {
      button.setAttribute('aria-pressed', theme === 'dark' ? 'true' : 'false');
      button.textContent = theme === 'dark' ? '\\u2600\\ufe0f' : '\\ud83c\\udf19';
    }
  }

  applyTheme(readStoredTheme());

  var toggle = document.getElementById('theme-toggle');
  if (toggle) {
    toggle.addEventListener('click', function () {
      var next = root.dataset.theme === 'dark' ? 'light' : 'dark';
      applyTheme(next);
      storeTheme(next);
    });
  }

  var items = document.querySelectorAll('#notes li');
  var count = document.getElementById('note-count');
  if (count) {
    count.textContent = items.length + (items.length === 1 ? ' note' : ' notes');
  }
})();
"""

CHECK_THEME_JS = r"""#!/usr/bin/env node
// Checks the dark mode toggle of the Notes page (T003). No dependencies.
//   node tests/check-theme.js                 markers + behaviour in a fake DOM
//   node tests/check-theme.js --no-external   nothing is loaded from another origin
// Prints OK and exits 0 when everything holds, else lists the problems and exits 1.
'use strict';
const fs = require('fs');
const path = require('path');
const vm = require('vm');

const root = path.resolve(__dirname, '..');
const problems = [];

function read(name) {
  try {
    return fs.readFileSync(path.join(root, name), 'utf8');
  } catch (err) {
    problems.push(name + ' is missing');
    return null;
  }
}

function requireMarker(name, text, marker) {
  if (text !== null && !text.includes(marker)) problems.push(name + ' does not contain ' + marker);
}

function memoryStorage(initial) {
  const map = new Map(Object.entries(initial || {}));
  return {
    getItem: (k) => (map.has(k) ? map.get(k) : null),
    setItem: (k, v) => { map.set(k, String(v)); },
    removeItem: (k) => { map.delete(k); },
    map,
  };
}

function brokenStorage() {
  const fail = () => { throw new Error('storage is disabled'); };
  return { getItem: fail, setItem: fail, removeItem: fail };
}

// Runs app.js against a minimal fake DOM and returns handles to inspect it.
function runApp(source, storage) {
  const listeners = {};
  const attrs = {};
  const button = {
    id: 'theme-toggle',
    textContent: '',
    setAttribute(k, v) { attrs[k] = String(v); },
    getAttribute(k) { return k in attrs ? attrs[k] : null; },
    addEventListener(type, fn) { (listeners[type] = listeners[type] || []).push(fn); },
    click() { (listeners.click || []).forEach((fn) => fn.call(button, { type: 'click', target: button, preventDefault() {} })); },
  };
  const html = {
    dataset: {},
    setAttribute(k, v) { if (k === 'data-theme') this.dataset.theme = String(v); },
    getAttribute(k) { return k === 'data-theme' && this.dataset.theme !== undefined ? this.dataset.theme : null; },
  };
  const docListeners = {};
  const document = {
    readyState: 'complete',
    documentElement: html,
    getElementById: (id) => (id === 'theme-toggle' ? button : null),
    querySelector: (sel) => (sel === '#theme-toggle' ? button : null),
    querySelectorAll: () => [],
    addEventListener(type, fn) { (docListeners[type] = docListeners[type] || []).push(fn); },
  };
  const ctx = { document, localStorage: storage, console };
  ctx.window = ctx;
  ctx.addEventListener = (type, fn) => { (docListeners[type] = docListeners[type] || []).push(fn); };
  vm.createContext(ctx);
  vm.runInContext(source, ctx, { filename: 'app.js', timeout: 5000 });
  for (const type of ['DOMContentLoaded', 'load']) (docListeners[type] || []).forEach((fn) => fn({ type }));
  return { button, theme: () => html.dataset.theme };
}

function checkBehaviour(js) {
  try {
    const store = memoryStorage();
    const app = runApp(js, store);
    if (app.theme() !== 'light' && app.theme() !== undefined) problems.push('initial theme is ' + app.theme() + ', expected light');
    app.button.click();
    if (app.theme() !== 'dark') problems.push('first click: data-theme is ' + app.theme() + ', expected dark');
    if (store.map.get('notes-theme') !== 'dark') problems.push('first click: localStorage notes-theme is ' + store.map.get('notes-theme') + ', expected dark');
    app.button.click();
    if (app.theme() !== 'light') problems.push('second click: data-theme is ' + app.theme() + ', expected light');
    if (store.map.get('notes-theme') !== 'light') problems.push('second click: localStorage notes-theme is ' + store.map.get('notes-theme') + ', expected light');

    const restored = runApp(js, memoryStorage({ 'notes-theme': 'dark' }));
    if (restored.theme() !== 'dark') problems.push('reload with notes-theme=dark: data-theme is ' + restored.theme() + ', expected dark');

    const noStorage = runApp(js, brokenStorage());
    noStorage.button.click();
    if (noStorage.theme() !== 'dark') problems.push('without storage: click gives data-theme ' + noStorage.theme() + ', expected dark');
  } catch (err) {
    problems.push('app.js threw in the fake DOM: ' + (err && err.message ? err.message : String(err)));
  }
}

function checkNoExternal() {
  const html = read('index.html');
  if (html !== null) {
    const tag = /<(script|link|img|iframe|source)\b[^>]*?\b(src|href)\s*=\s*["']?\s*(?:[a-z][a-z0-9+.-]*:)?\/\//gi;
    let m;
    while ((m = tag.exec(html)) !== null) problems.push('index.html loads from another origin: ' + m[0]);
  }
  const css = read('style.css');
  if (css !== null && /(@import|url\()\s*["']?\s*(?:[a-z][a-z0-9+.-]*:)?\/\//i.test(css)) {
    problems.push('style.css imports from another origin');
  }
  const pkgText = read('package.json');
  if (pkgText !== null) {
    try {
      const pkg = JSON.parse(pkgText);
      for (const key of ['dependencies', 'devDependencies', 'peerDependencies', 'optionalDependencies']) {
        if (pkg[key] && Object.keys(pkg[key]).length > 0) problems.push('package.json has ' + key);
      }
    } catch (err) {
      problems.push('package.json is not valid JSON');
    }
  }
}

if (process.argv.includes('--no-external')) {
  checkNoExternal();
} else {
  const html = read('index.html');
  const css = read('style.css');
  const js = read('app.js');
  requireMarker('index.html', html, 'id="theme-toggle"');
  requireMarker('style.css', css, '[data-theme="dark"]');
  requireMarker('app.js', js, 'localStorage');
  requireMarker('app.js', js, 'notes-theme');
  requireMarker('app.js', js, 'theme-toggle');
  if (js !== null && problems.length === 0) checkBehaviour(js);
}

if (problems.length > 0) {
  console.log('FAILED');
  for (const p of problems) console.log(' - ' + p);
  process.exit(1);
}
console.log('OK');
"""


def implement_t001(wd):
    files = ["index.html", "style.css"]
    index_path = os.path.join(wd, "index.html")
    html = read_text(index_path)
    if html is None:
        return "blocked", "index.html is missing", files
    if 'id="theme-toggle"' not in html:
        pos = html.find("</header>")
        if pos < 0:
            return "blocked", "index.html has no <header> to put the toggle in", files
        line_start = html.rfind("\n", 0, pos) + 1
        indent = html[line_start:pos] if html[line_start:pos].strip() == "" else ""
        html = html[:line_start] + indent + "  " + TOGGLE_BUTTON + "\n" + html[line_start:]
        write_file(index_path, html)
    css_path = os.path.join(wd, "style.css")
    css = read_text(css_path) or ""
    if '[data-theme="dark"]' not in css:
        write_file(css_path, css.rstrip("\n") + "\n" + DARK_CSS)
    return "done", "Added the theme toggle button to the header and the dark palette", files


def implement_t002(wd):
    write_file(os.path.join(wd, "app.js"), APP_JS)
    return "done", "app.js toggles data-theme on <html> and persists it under localStorage notes-theme", ["app.js"]


def implement_t003(wd):
    write_file(os.path.join(wd, "tests", "check-theme.js"), CHECK_THEME_JS)
    return "done", "Added tests/check-theme.js (markers, fake-DOM behaviour, --no-external)", ["tests/check-theme.js"]


# DEMO_IMPL_FLAW=unwired|stubborn: T002 writes an app.js whose toggle is never wired to a click
# listener (the task reviewer, who only checks for localStorage, approves it; the acceptance
# cases catch it). With `unwired` a fix task (FIX<round>) repairs it; with `stubborn` fix tasks
# rewrite the same flawed file, so the evaluate loop stalls until another agent takes over.
UNWIRED_APP_JS = APP_JS.replace(
    """  if (toggle) {
    toggle.addEventListener('click', function () {
      var next = root.dataset.theme === 'dark' ? 'light' : 'dark';
      applyTheme(next);
      storeTheme(next);
    });
  }
""",
    """  // (the click handler is missing)
  void toggle;
""",
)


def flaw():
    return os.environ.get("DEMO_IMPL_FLAW", "")


def implement_t002_flawed(wd):
    if flaw() in ("unwired", "stubborn"):
        write_file(os.path.join(wd, "app.js"), UNWIRED_APP_JS)
        return "done", "app.js applies and stores the theme", ["app.js"]
    return implement_t002(wd)


def implement_fix(wd):
    """A fix task: rewrite every file of T001-T003 as they should be (idempotent), unless the
    `stubborn` flaw is on, in which case app.js stays broken."""
    implement_t001(wd)
    if flaw() == "stubborn":
        write_file(os.path.join(wd, "app.js"), UNWIRED_APP_JS)
    else:
        implement_t002(wd)
    implement_t003(wd)
    return "done", "re-applied T001-T003 against the failing acceptance cases", ["index.html", "style.css", "app.js", "tests/check-theme.js"]


IMPLEMENTATIONS = {"T001": implement_t001, "T002": implement_t002_flawed, "T003": implement_t003}


def slow_hook(tid):
    """DEMO_SLOW_TASK=<task id> + DEMO_MARKER=<file>: the first call creates the marker and sleeps
    60 s before working (a test kills the orchestrator meanwhile); later calls proceed at once."""
    slow = os.environ.get("DEMO_SLOW_TASK")
    marker = os.environ.get("DEMO_MARKER")
    if not slow or not marker or slow != tid or os.path.exists(marker):
        return
    import time

    with open(marker, "w", encoding="utf-8") as fh:
        fh.write("%s started, sleeping\n" % tid)
        fh.flush()
        os.fsync(fh.fileno())
    sys.stderr.write("demo implementer: %s sleeping 60 s (marker %s)\n" % (tid, marker))
    sys.stderr.flush()
    time.sleep(60)


def implement(req):
    tid = task_id_of(req)
    fn = IMPLEMENTATIONS.get(tid)
    if fn is None and tid.startswith("FIX"):
        fn = implement_fix
    if fn is None:
        report("blocked", "unknown task id %r: the demo implementer only knows T001, T002, T003" % tid,
               output="", usage={"input_tokens": 300, "output_tokens": 20, "usd": 0.0})
        return
    slow_hook(tid)
    status, summary, files = fn(workdir_of(req))
    report(status, "%s: %s" % (tid, summary), output={"task": tid, "files": files},
           usage={"input_tokens": 900, "output_tokens": 600, "usd": 0.0})


# ---------------------------------------------------------------------------------------------
# e2e_runner: prose steps -> structured browser steps; rubric scores of screenshots
# ---------------------------------------------------------------------------------------------

# The structured steps of the demo's browser case, as an e2e_runner would write them after
# reading test.md and the app's markup (selectors that exist in index.html / app.js).
BROWSER_STEPS = {
    "T-A05": [
        {"action": "goto", "url": "/"},
        {"action": "expect_text", "selector": "h1", "text": "Notes"},
        {"action": "expect_visible", "selector": "#theme-toggle"},
        {"action": "screenshot", "name": "light"},
        {"action": "click", "selector": "#theme-toggle"},
        {"action": "wait_for", "selector": "html[data-theme=\"dark\"]", "state": "attached"},
        {"action": "expect_visible", "selector": "#theme-toggle[aria-pressed=\"true\"]"},
        {"action": "screenshot", "name": "dark"},
        {"action": "reload"},
        {"action": "wait_for", "selector": "html[data-theme=\"dark\"]", "state": "attached"},
        {"action": "screenshot", "name": "dark-after-reload"},
    ],
}

CRITERION_LINE = re.compile(r"^- criterion `([A-Za-z0-9_-]+)`: ", re.MULTILINE)
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def convert_steps(req):
    """One call converts every case asked (the task id lists them, space-separated): the answer
    holds one steps object per case id it knows; a case it does not know is left out."""
    ids = task_id_of(req).split()
    cases = {tid: {"steps": BROWSER_STEPS[tid]} for tid in ids if tid in BROWSER_STEPS}
    if not cases:
        sys.stdout.write("I do not know how to drive %s in a browser.\n" % ", ".join(ids))
        sys.stdout.flush()
        return
    report("done", "Converted the prose steps of %s into browser steps" % ", ".join(sorted(cases)),
           output={"cases": cases}, usage={"input_tokens": 700, "output_tokens": 300, "usd": 0.0})


def score_screenshots(req):
    """Scores come from DEMO_RUBRIC_SCORES (comma list, one per evaluate round, the last one
    repeating; default 8). The criteria are the "- criterion `name`: ..." lines of the prompt. Every
    screenshot named in the prompt must be a real PNG file, else every criterion scores 0."""
    prompt = str(req.get("prompt") or "")
    criteria = CRITERION_LINE.findall(prompt) or ["overall"]
    wd = workdir_of(req)
    shots = [line.strip() for line in prompt.splitlines() if line.strip().endswith(".png")]
    real = bool(shots)
    for rel in shots:
        try:
            with open(os.path.join(wd, rel), "rb") as fh:
                real = real and fh.read(8) == PNG_MAGIC
        except OSError:
            real = False
    values = [v for v in os.environ.get("DEMO_RUBRIC_SCORES", "8").split(",") if v.strip()]
    idx = max(0, min(spec_round(req), len(values)) - 1)
    value = float(values[idx]) if real else 0.0
    seen = "looked at %s" % ", ".join(os.path.basename(s) for s in shots) if real else "a screenshot is missing or not a PNG"
    body = {"scores": {c: {"score": value, "evidence": seen} for c in criteria},
            "notes": "scored %d screenshot(s)" % len(shots) if real else "a screenshot is missing or not a PNG"}
    sys.stdout.write("My scores:\n\n```json\n" + json.dumps(body) + "\n```\n")
    sys.stdout.flush()


def e2e_runner(req):
    if os.environ.get("DEMO_E2E_MODE") == "garbage":
        # Test hook: an e2e_runner whose answers hold no usable JSON.
        sys.stdout.write("The steps are obvious: open the page and click the button.\n")
        sys.stdout.flush()
        return
    task = req.get("task") if isinstance(req.get("task"), dict) else {}
    if str(req.get("phase") or "") == "evaluate" and task.get("kind") != "playwright":
        # A playwright task at evaluate is a re-conversion against the built app: steps again.
        score_screenshots(req)
    else:
        convert_steps(req)


# ---------------------------------------------------------------------------------------------
# dispatch
# ---------------------------------------------------------------------------------------------

IMPLEMENTER_ROLES = ("impl_ui", "impl_backend", "impl_test")


def dispatch(req):
    role = str(req.get("role") or "")
    if role == "spec_author":
        author_spec(req)
    elif role in ("spec_reviewer", "debater") or role.startswith("panel:"):
        review_spec(req)
    elif role == "task_reviewer":
        review_task(req)
    elif role in IMPLEMENTER_ROLES:
        implement(req)
    elif role == "e2e_runner" and req.get("phase") == "spec_review":
        review_contract(req)
    elif role == "e2e_runner":
        # spec_generate: browser steps; evaluate: rubric scores.
        e2e_runner(req)
    elif role == "classifier":
        envelope_reply("A contained front-end change.",
                       {"type": "small-feature", "risk": "low", "scope": "small"})
    elif role == "judge":
        judge(req)
    else:
        report("done", "demo agent: nothing to do for role %r" % role, output="",
               usage={"input_tokens": 100, "output_tokens": 10, "usd": 0.0})


def review_contract(req):
    """e2e_runner during spec_review: reviews test.md as the acceptance contract. The demo's
    four cases are granular, observable and runnable by the harness, so it has no findings."""
    test_md = read_text(os.path.join(spec_dir_of(req), "test.md")) or ""
    cases = len(re.findall(r"^## T-A\d+", test_md, re.MULTILINE))
    if cases == 0:
        envelope_reply("test.md has no acceptance case.", {
            "findings": [{"id": "C1", "severity": "critical", "file": "test.md", "section": "coverage",
                          "gist": "test.md defines no acceptance case", "argument": "",
                          "suggestion": "add one case per requirement"}],
            "converged": False, "remaining_disputes": []})
        return
    envelope_reply("I checked the %d acceptance cases as the contract I will evaluate against." % cases,
                   {"findings": [], "converged": True, "remaining_disputes": []})


def judge(req):
    """The judge of a debate: keeps every finding (no decisions = kept) and, for a stand-alone
    debate, returns the input document unchanged as the final spec."""
    files = req.get("files") or []
    spec = read_text(os.path.join(workdir_of(req), files[0])) if files else None
    answer = {"decisions": []}
    if spec:
        answer["spec"] = spec
    envelope_reply("Ruling:", answer)

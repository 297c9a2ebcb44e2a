#!/usr/bin/env node
// spec-orchestrate's browser driver: runs one acceptance case's structured steps in Chromium
// through Playwright and reports what happened to every step.
//
// Why a separate Node program: Playwright is a Node library, and keeping the browser out of the
// Rust process means a hung page can be killed with its whole process group by the harness.
//
// Input: one JSON object on stdin
//   { "case_id": "T-A05", "base_url": "http://127.0.0.1:4173/", "out_dir": "/abs/evidence/1",
//     "browser": "/usr/bin/chromium" | null, "step_timeout_ms": 10000,
//     "viewport": { "width": 1280, "height": 800 }, "steps": [ { "action": "goto", "url": "/" } ] }
// Output: one JSON object on stdout
//   { "ok": bool, "setup_error": string|null, "browser_version": string|null,
//     "run_id": "r5f3a9c1e", "steps": [ { "index", "action", "target", "ok", "ms", "error",
//     "screenshot", "no_match", "page", "dialogs": [ { "type", "message", "handled", "expected" } ] } ],
//     "screenshots": [ "T-A05-03-dark.png" ], "console": [ "error: …" ],
//     "requests": [ { "step", "method", "url", "status" } ] }
//
// Dialogs: Playwright dismisses every dialog when no handler is set, so a "cancel" case would
// pass on a build whose button does nothing. Here a handler is always set: `accept_dialog` /
// `dismiss_dialog` arm it for the next dialog, and a dialog that opens while nothing is armed is
// dismissed (the page must not freeze) and fails the step during which it opened. An armed
// handler that no dialog used by the end of the case fails the step that armed it.
// Exit code: 0 every step held, 1 a step failed, 2 the request was invalid or the browser could
// not start (the harness reports such a case as BLOCKED, not FAIL).
'use strict';

const crypto = require('crypto');
const fs = require('fs');
const path = require('path');

// Flags that let Chromium start headless as root on a machine without network access.
const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
];

const ACTIONS = {
  goto: ['url'],
  click: ['selector'],
  fill: ['selector', 'value'],
  press: ['key'],
  select: ['selector', 'value'],
  expect_text: ['text'],
  expect_visible: ['selector'],
  expect_url: ['url'],
  expect_images: [],
  screenshot: [],
  wait_for: [],
  reload: [],
  accept_dialog: [],
  dismiss_dialog: [],
  expect_dialog: [],
  expect_count: ['selector'],
  expect_value: ['selector'],
  expect_request: ['url'],
};

// Longest per-step `timeout_ms` a step may ask for (the Rust side enforces the same cap).
const MAX_STEP_TIMEOUT_MS = 60000;
// How long `expect_request` with `"seen": false` watches the network when the step names no
// `timeout_ms`: long enough for a click's fetch to leave, short enough not to slow every case.
const NOT_SEEN_WATCH_MS = 1000;
const DIALOG_TYPES = ['alert', 'confirm', 'prompt', 'beforeunload'];
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'];

function emit(result, code) {
  process.stdout.write(JSON.stringify(result) + '\n', () => process.exit(code));
}

function readStdin() {
  return new Promise((resolve, reject) => {
    const chunks = [];
    process.stdin.on('data', (c) => chunks.push(c));
    process.stdin.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    process.stdin.on('error', reject);
  });
}

// Problems with the request itself, so that a bad step file is reported before a browser starts.
function validate(req) {
  const problems = [];
  if (!req || typeof req !== 'object') return ['the request is not a JSON object'];
  if (typeof req.case_id !== 'string' || !/^[A-Za-z0-9._-]+$/.test(req.case_id)) {
    problems.push('case_id must be a plain identifier such as T-A05');
  }
  if (typeof req.base_url !== 'string' || !/^https?:\/\//.test(req.base_url)) {
    problems.push('base_url must be an http(s) URL');
  }
  if (typeof req.out_dir !== 'string' || !path.isAbsolute(req.out_dir)) {
    problems.push('out_dir must be an absolute directory');
  }
  if (!Array.isArray(req.steps) || req.steps.length === 0) {
    problems.push('steps must be a non-empty array');
    return problems;
  }
  req.steps.forEach((s, i) => {
    const n = i + 1;
    if (!s || typeof s !== 'object') {
      problems.push(`step ${n} is not an object`);
      return;
    }
    const needs = ACTIONS[s.action];
    if (!needs) {
      problems.push(`step ${n}: unknown action ${JSON.stringify(s.action)} (allowed: ${Object.keys(ACTIONS).join(', ')})`);
      return;
    }
    for (const key of needs) {
      // `expect_text` with an empty `text` and `exact: true` asserts that the element is empty.
      const emptyAllowed = s.action === 'expect_text' && key === 'text' && s.exact === true;
      if (typeof s[key] !== 'string' || (s[key].length === 0 && !emptyAllowed)) {
        problems.push(`step ${n} (${s.action}) needs a non-empty string "${key}"`);
      }
    }
    if (s.action === 'wait_for' && typeof s.selector !== 'string' && typeof s.ms !== 'number') {
      problems.push(`step ${n} (wait_for) needs "selector" or "ms"`);
    }
    if (s.timeout_ms !== undefined && !(Number.isInteger(s.timeout_ms) && s.timeout_ms > 0 && s.timeout_ms <= MAX_STEP_TIMEOUT_MS)) {
      problems.push(`step ${n} (${s.action}): "timeout_ms" must be a whole number from 1 to ${MAX_STEP_TIMEOUT_MS}`);
    }
    if (s.action === 'expect_value' && typeof s.value !== 'string') {
      problems.push(`step ${n} (expect_value) needs a string "value"`);
    }
    if (s.action === 'expect_count') {
      const nums = ['count', 'min', 'max'].filter((k) => s[k] !== undefined);
      if (nums.length === 0 || nums.some((k) => !Number.isInteger(s[k]) || s[k] < 0) || (s.count !== undefined && nums.length > 1)) {
        problems.push(`step ${n} (expect_count) needs a whole "count", or "min" and/or "max"`);
      }
    }
    if (s.action === 'expect_dialog' && s.type !== undefined && !DIALOG_TYPES.includes(s.type)) {
      problems.push(`step ${n} (expect_dialog): "type" must be one of ${DIALOG_TYPES.join(', ')}`);
    }
    if (s.action === 'expect_request' && s.method !== undefined && !METHODS.includes(s.method)) {
      problems.push(`step ${n} (expect_request): "method" must be one of ${METHODS.join(', ')}`);
    }
  });
  return problems;
}

function target(step) {
  if (step.action === 'expect_request') return `${step.method || '*'} ${step.url}${step.seen === false ? ' (not seen)' : ''}`;
  if (step.action === 'expect_dialog') return `${step.type || 'any'} ${step.message ? JSON.stringify(step.message) : ''}`.trim();
  return step.selector || step.url || step.key || step.text || step.name || (step.ms !== undefined ? `${step.ms} ms` : '');
}

// `{{run_id}}` in any string of a step becomes this run's unique value, so that a case can type
// a value no earlier run left behind and then look for exactly that value.
function substitute(step, runId) {
  const out = {};
  for (const [k, v] of Object.entries(step)) out[k] = typeof v === 'string' ? v.split('{{run_id}}').join(runId) : v;
  return out;
}

// A URL pattern: `*` stands for any run of characters; a pattern starting with `/` is matched
// against the request's path and query, any other against the whole URL.
function urlMatches(pattern, url) {
  let subject = url;
  if (pattern.startsWith('/')) {
    try {
      const u = new URL(url);
      subject = u.pathname + u.search;
    } catch (_) {
      return false;
    }
  }
  const re = new RegExp('^' + pattern.split('*').map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*') + '$');
  return re.test(subject);
}

function requestMatches(step, r) {
  return (!step.method || r.method === step.method) && urlMatches(step.url, r.url);
}

function slug(s) {
  return String(s || '').toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 40);
}

// Polls `probe` until it returns true or the timeout passes; the last observation explains a miss.
async function until(timeoutMs, probe, describe) {
  const deadline = Date.now() + timeoutMs;
  let seen;
  for (;;) {
    const r = await probe();
    if (r.ok) return;
    seen = r.seen;
    if (Date.now() >= deadline) throw new Error(describe(seen));
    await new Promise((res) => setTimeout(res, 100));
  }
}

async function runStep(page, step, ctx) {
  const timeout = step.timeout_ms || ctx.stepTimeout;
  switch (step.action) {
    case 'reload': {
      const resp = await page.reload({ waitUntil: 'load', timeout });
      if (resp && resp.status() >= 400) throw new Error(`reloading ${page.url()} answered HTTP ${resp.status()}`);
      return null;
    }
    case 'accept_dialog':
    case 'dismiss_dialog':
      if (ctx.armed) {
        throw new Error(`step ${ctx.armed.index} (${ctx.armed.action}) is still waiting for its dialog; a handler answers one dialog, so expect the first before arming another`);
      }
      ctx.armed = { index: ctx.index, action: step.action, promptText: step.prompt_text };
      return null;
    case 'expect_dialog': {
      await until(
        timeout,
        async () => ({ ok: ctx.dialogCursor < ctx.dialogs.length, seen: null }),
        () => `no dialog opened${ctx.dialogCursor > 0 ? ' after the one already expected' : ''}`,
      );
      const d = ctx.dialogs[ctx.dialogCursor];
      ctx.dialogCursor += 1;
      if (step.type && d.type !== step.type) throw new Error(`a ${d.type} dialog opened (${JSON.stringify(d.message)}), expected a ${step.type} dialog`);
      if (step.message && !d.message.includes(step.message)) {
        throw new Error(`the ${d.type} dialog says ${JSON.stringify(d.message)}, which does not contain ${JSON.stringify(step.message)}`);
      }
      return null;
    }
    case 'expect_count': {
      const loc = page.locator(step.selector);
      const fits = (n) => (step.count !== undefined ? n === step.count : (step.min === undefined || n >= step.min) && (step.max === undefined || n <= step.max));
      const want = step.count !== undefined ? `exactly ${step.count}` : [step.min !== undefined ? `at least ${step.min}` : null, step.max !== undefined ? `at most ${step.max}` : null].filter(Boolean).join(' and ');
      await until(
        timeout,
        async () => {
          const n = await loc.count();
          return { ok: fits(n), seen: n };
        },
        (seen) => `${step.selector} matches ${seen} element(s), expected ${want}`,
      );
      return null;
    }
    case 'expect_value': {
      const loc = page.locator(step.selector);
      await until(
        timeout,
        async () => {
          const v = await loc.inputValue({ timeout: 1000 }).catch((e) => ({ error: String(e.message || e).split('\n')[0] }));
          return { ok: v === step.value, seen: v };
        },
        (seen) => (seen && typeof seen === 'object'
          ? `${step.selector} has no value to read: ${seen.error.slice(0, 200)}`
          : `${step.selector} holds ${JSON.stringify(String(seen).slice(0, 200))}, expected ${JSON.stringify(step.value)}`),
      );
      return null;
    }
    case 'expect_request':
      await expectRequest(page, step, ctx, timeout);
      return null;
    case 'goto': {
      const url = new URL(step.url, ctx.baseUrl).toString();
      const resp = await page.goto(url, { waitUntil: 'load', timeout });
      if (resp && resp.status() >= 400) throw new Error(`GET ${url} answered HTTP ${resp.status()}`);
      return null;
    }
    case 'click':
      await page.locator(step.selector).click({ timeout });
      return null;
    case 'fill':
      await page.locator(step.selector).fill(step.value, { timeout });
      return null;
    case 'press':
      if (step.selector) await page.locator(step.selector).press(step.key, { timeout });
      else await page.keyboard.press(step.key);
      return null;
    case 'select':
      await page.locator(step.selector).selectOption(step.value, { timeout });
      return null;
    case 'expect_text': {
      const selector = step.selector || 'body';
      const loc = page.locator(selector).first();
      await until(
        timeout,
        async () => {
          const text = (await loc.textContent({ timeout: 1000 }).catch(() => null)) || '';
          const ok = step.exact ? text.trim() === step.text : text.includes(step.text);
          return { ok, seen: text };
        },
        (seen) => `${selector} does not ${step.exact ? 'equal' : 'contain'} ${JSON.stringify(step.text)}; it reads ${JSON.stringify(String(seen || '').trim().slice(0, 200))}`,
      );
      return null;
    }
    case 'expect_visible':
      await page.locator(step.selector).first().waitFor({ state: 'visible', timeout });
      return null;
    case 'expect_images': {
      // Every matching image (at least one) has loaded and decoded: a broken or blocked image
      // has naturalWidth 0.
      const selector = step.selector || 'img';
      await until(
        timeout,
        async () => {
          const seen = await page.$$eval(selector, (imgs) => imgs.map((i) => ({
            src: String(i.currentSrc || i.src || '').slice(0, 60),
            width: i.complete ? i.naturalWidth : 0,
          })));
          return { ok: seen.length > 0 && seen.every((i) => i.width > 0), seen };
        },
        (seen) => {
          const list = seen || [];
          if (list.length === 0) return `no element matches ${selector}`;
          const broken = list.filter((i) => i.width === 0).map((i) => i.src);
          return `${broken.length} of ${list.length} image(s) did not decode: ${broken.slice(0, 5).join(', ')}`;
        },
      );
      return null;
    }
    case 'expect_url': {
      const want = new URL(step.url, ctx.baseUrl).toString();
      await until(
        timeout,
        async () => ({ ok: page.url() === want, seen: page.url() }),
        (seen) => `the page is at ${seen}, expected ${want}`,
      );
      return null;
    }
    case 'wait_for':
      if (typeof step.selector === 'string') {
        await page.locator(step.selector).first().waitFor({ state: step.state || 'visible', timeout });
      } else {
        await page.waitForTimeout(Math.min(Number(step.ms) || 0, timeout));
      }
      return null;
    case 'screenshot':
      return await shoot(page, ctx, step.name || `step-${ctx.index}`, step.full_page === true);
    default:
      throw new Error(`unknown action ${step.action}`);
  }
}

// A request (method + URL pattern, optionally its response status) was seen since the case
// began, or with `"seen": false` none was within the watch time.
async function expectRequest(page, step, ctx, timeout) {
  const matching = () => ctx.requests.filter((r) => requestMatches(step, r));
  const describe = () => {
    const same = ctx.requests.filter((r) => !step.method || r.method === step.method).slice(-5);
    return same.length === 0 ? 'none was sent' : `seen: ${same.map((r) => `${r.method} ${r.url} -> ${r.status === null ? 'no answer' : r.status}`).join(', ')}`;
  };
  if (step.seen === false) {
    await page.waitForTimeout(step.timeout_ms || NOT_SEEN_WATCH_MS);
    const hits = matching();
    if (hits.length > 0) throw new Error(`${hits[0].method} ${hits[0].url} was sent (at step ${hits[0].step}), expected no ${step.method || ''} request to ${step.url}`);
    return;
  }
  await until(
    timeout,
    async () => ({ ok: matching().some((r) => step.status === undefined || r.status === step.status), seen: null }),
    () => `no ${step.method || ''} request to ${step.url}${step.status !== undefined ? ` answered ${step.status}` : ''} (${describe()})`,
  );
}

// Every dialog is answered here (a page with an open dialog freezes) and recorded on the step
// during which it opened: by the armed handler, else dismissed and marked unexpected.
function onDialog(ctx) {
  return async (dialog) => {
    const record = { step: ctx.index, type: dialog.type(), message: dialog.message().slice(0, 300), handled: 'dismissed', expected: false };
    const armed = ctx.armed;
    ctx.armed = null;
    ctx.dialogs.push(record);
    try {
      if (armed && armed.action === 'accept_dialog') {
        record.handled = 'accepted';
        record.expected = true;
        if (typeof armed.promptText === 'string') record.prompt_text = armed.promptText;
        await dialog.accept(armed.promptText);
      } else {
        record.expected = Boolean(armed);
        await dialog.dismiss();
      }
    } catch (_) {
      // The page may already be closing; the record stands.
    }
  };
}

// Longest page outline a failed step carries (the re-conversion prompt quotes it whole).
const PAGE_OUTLINE_CHARS = 6000;

// The page as a person (or a role locator) finds it: its accessibility tree, roles and accessible
// names (`- button "Toggle dark mode"`), else its visible text; cut to PAGE_OUTLINE_CHARS.
async function pageOutline(page) {
  const cut = (s) => (s.length > PAGE_OUTLINE_CHARS ? `${s.slice(0, PAGE_OUTLINE_CHARS)}\n… (cut)` : s);
  try {
    return cut(await page.locator('body').ariaSnapshot({ timeout: 2000 }));
  } catch (_) {
    const text = await page.locator('body').innerText({ timeout: 1000 }).catch(() => '');
    return text ? cut(`(no accessibility tree; the page's text)\n${text}`) : null;
  }
}

async function shoot(page, ctx, name, fullPage) {
  const file = `${ctx.caseId}-${String(ctx.index).padStart(2, '0')}-${slug(name) || 'shot'}.png`;
  await page.screenshot({ path: path.join(ctx.outDir, file), fullPage });
  ctx.screenshots.push(file);
  return file;
}

async function main() {
  let req;
  try {
    req = JSON.parse(await readStdin());
  } catch (e) {
    return emit({ ok: false, setup_error: `stdin is not JSON: ${e.message}`, steps: [], screenshots: [], console: [] }, 2);
  }
  const problems = validate(req);
  if (problems.length > 0) {
    return emit({ ok: false, setup_error: problems.join('; '), steps: [], screenshots: [], console: [] }, 2);
  }
  const result = { ok: true, setup_error: null, browser_version: null, run_id: `r${crypto.randomBytes(4).toString('hex')}`, steps: [], screenshots: [], console: [], requests: [] };
  let chromium;
  try {
    ({ chromium } = require('playwright-core'));
  } catch (e) {
    result.ok = false;
    result.setup_error = `playwright-core is not installed next to ${__filename} (run \`npm ci\` in ${__dirname}): ${e.message}`;
    return emit(result, 2);
  }
  if (req.browser && !fs.existsSync(req.browser)) {
    result.ok = false;
    result.setup_error = `no browser at ${req.browser}: install Chromium (e.g. \`apt-get install chromium\`) or point SPEC_ORCHESTRATE_BROWSER / evaluate.browser at it`;
    return emit(result, 2);
  }
  fs.mkdirSync(req.out_dir, { recursive: true });
  let browser;
  try {
    browser = await chromium.launch({
      executablePath: req.browser || undefined,
      headless: true,
      chromiumSandbox: false,
      args: CHROMIUM_ARGS,
      timeout: 60000,
    });
  } catch (e) {
    result.ok = false;
    result.setup_error = `the browser did not start: ${String(e.message).split('\n').slice(0, 6).join(' | ')}` +
      (req.browser ? '' : ' (no browser path was given, so Playwright looked for its own download; install Chromium, e.g. `apt-get install chromium`, or point SPEC_ORCHESTRATE_BROWSER / evaluate.browser at one)');
    return emit(result, 2);
  }
  result.browser_version = browser.version();
  const ctx = {
    caseId: req.case_id,
    baseUrl: req.base_url,
    outDir: req.out_dir,
    stepTimeout: Number(req.step_timeout_ms) > 0 ? Number(req.step_timeout_ms) : 10000,
    screenshots: result.screenshots,
    index: 0,
    runId: result.run_id,
    armed: null,
    dialogs: [],
    dialogCursor: 0,
    requests: result.requests,
  };
  let page;
  try {
    const context = await browser.newContext({ viewport: req.viewport || { width: 1280, height: 800 } });
    page = await context.newPage();
    page.setDefaultTimeout(ctx.stepTimeout);
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') result.console.push(`${m.type()}: ${m.text()}`.slice(0, 500));
    });
    page.on('pageerror', (e) => result.console.push(`pageerror: ${e.message}`.slice(0, 500)));
    page.on('dialog', onDialog(ctx));
    const sent = new Map();
    page.on('request', (r) => {
      if (ctx.requests.length >= 2000) return;
      const rec = { step: ctx.index, method: r.method(), url: r.url().slice(0, 500), status: null };
      sent.set(r, rec);
      ctx.requests.push(rec);
    });
    page.on('response', (resp) => {
      const rec = sent.get(resp.request());
      if (rec) rec.status = resp.status();
    });
    await runAll(page, req, ctx, result);
  } catch (e) {
    result.ok = false;
    result.setup_error = result.setup_error || `the browser failed: ${String(e.message).split('\n')[0]}`;
  } finally {
    await browser.close().catch(() => {});
  }
  return emit(result, result.ok ? 0 : result.setup_error ? 2 : 1);
}

// Runs the steps in order up to the first failure, then the end-of-case dialog checks, and takes
// the failure or final screenshot.
async function runAll(page, req, ctx, result) {
  let lastWasShot = false;
  let seenDialogs = 0;
  for (let i = 0; i < req.steps.length; i++) {
    const step = substitute(req.steps[i], ctx.runId);
    ctx.index = i + 1;
    const started = Date.now();
    const record = { index: i + 1, action: step.action, target: target(step), ok: true, ms: 0, error: null, screenshot: null };
    try {
      record.screenshot = await runStep(page, step, ctx);
    } catch (e) {
      record.ok = false;
      record.error = String(e.message || e).split('\n')[0].slice(0, 400);
      if (step.selector) record.no_match = (await page.locator(step.selector).count().catch(() => -1)) === 0;
      // What the page really holds, for a re-conversion of the case against the built app.
      if (record.no_match) record.page = await pageOutline(page);
    }
    record.ms = Date.now() - started;
    const opened = ctx.dialogs.slice(seenDialogs);
    seenDialogs = ctx.dialogs.length;
    if (opened.length > 0) record.dialogs = opened;
    const unexpected = opened.find((d) => !d.expected);
    if (record.ok && unexpected) {
      record.ok = false;
      record.error = `an unexpected ${unexpected.type} dialog opened (${JSON.stringify(unexpected.message)}) and was dismissed; arm accept_dialog or dismiss_dialog before the step that opens it`;
    }
    result.steps.push(record);
    lastWasShot = step.action === 'screenshot' && record.ok;
    if (!record.ok) {
      result.ok = false;
      // What the browser showed when the step failed is the most useful evidence of all.
      await shoot(page, ctx, 'failure', false).catch(() => {});
      return;
    }
  }
  const late = ctx.dialogs.slice(seenDialogs);
  const last = result.steps[result.steps.length - 1];
  if (late.length > 0 && last) {
    last.dialogs = (last.dialogs || []).concat(late);
    const unexpected = late.find((d) => !d.expected);
    if (unexpected) fail(last, `an unexpected ${unexpected.type} dialog opened (${JSON.stringify(unexpected.message)}) after the last step and was dismissed`);
  }
  if (ctx.armed) {
    // A "cancel" case on a build whose button opens no dialog must not pass.
    const armedStep = result.steps[ctx.armed.index - 1];
    if (armedStep) fail(armedStep, `no dialog opened after this step, so there was nothing to ${ctx.armed.action === 'accept_dialog' ? 'accept' : 'dismiss'} (the case ended with the handler unused)`);
  }
  if (result.steps.some((st) => !st.ok)) {
    result.ok = false;
    ctx.index = req.steps.length + 1;
    await shoot(page, ctx, 'failure', false).catch(() => {});
    return;
  }
  if (!lastWasShot) {
    ctx.index = req.steps.length + 1;
    await shoot(page, ctx, 'final', false);
  }
}

function fail(record, error) {
  record.ok = false;
  record.error = error;
}


main().catch((e) => emit({ ok: false, setup_error: `driver crashed: ${e && e.stack ? e.stack : e}`, steps: [], screenshots: [], console: [] }, 2));

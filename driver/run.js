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
//     "steps": [ { "index", "action", "target", "ok", "ms", "error", "screenshot" } ],
//     "screenshots": [ "T-A05-03-dark.png" ], "console": [ "error: …" ] }
// Exit code: 0 every step held, 1 a step failed, 2 the request was invalid or the browser could
// not start (the harness reports such a case as BLOCKED, not FAIL).
'use strict';

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
};

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
      if (typeof s[key] !== 'string' || s[key].length === 0) {
        problems.push(`step ${n} (${s.action}) needs a non-empty string "${key}"`);
      }
    }
    if (s.action === 'wait_for' && typeof s.selector !== 'string' && typeof s.ms !== 'number') {
      problems.push(`step ${n} (wait_for) needs "selector" or "ms"`);
    }
  });
  return problems;
}

function target(step) {
  return step.selector || step.url || step.key || step.text || step.name || (step.ms !== undefined ? `${step.ms} ms` : '');
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
  const timeout = ctx.stepTimeout;
  switch (step.action) {
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
  const result = { ok: true, setup_error: null, browser_version: null, steps: [], screenshots: [], console: [] };
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
    let lastWasShot = false;
    for (let i = 0; i < req.steps.length; i++) {
      const step = req.steps[i];
      ctx.index = i + 1;
      const started = Date.now();
      const record = { index: i + 1, action: step.action, target: target(step), ok: true, ms: 0, error: null, screenshot: null };
      try {
        record.screenshot = await runStep(page, step, ctx);
      } catch (e) {
        record.ok = false;
        record.error = String(e.message || e).split('\n')[0].slice(0, 400);
      }
      record.ms = Date.now() - started;
      result.steps.push(record);
      lastWasShot = step.action === 'screenshot' && record.ok;
      if (!record.ok) {
        result.ok = false;
        // What the browser showed when the step failed is the most useful evidence of all.
        ctx.index = i + 1;
        await shoot(page, ctx, 'failure', false).catch(() => {});
        break;
      }
    }
    if (result.ok && !lastWasShot) {
      ctx.index = req.steps.length + 1;
      await shoot(page, ctx, 'final', false);
    }
  } catch (e) {
    result.ok = false;
    result.setup_error = result.setup_error || `the browser failed: ${String(e.message).split('\n')[0]}`;
  } finally {
    await browser.close().catch(() => {});
  }
  return emit(result, result.ok ? 0 : result.setup_error ? 2 : 1);
}

main().catch((e) => emit({ ok: false, setup_error: `driver crashed: ${e && e.stack ? e.stack : e}`, steps: [], screenshots: [], console: [] }, 2));

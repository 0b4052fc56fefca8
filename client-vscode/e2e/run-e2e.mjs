// End-to-end test of the Tritonsmith extension in a real VS Code (code-server), driven by
// playwright-core and Debian's /usr/bin/chromium. Started by scripts/vscode-e2e.sh, which
// installs the .vsix, points `tritonsmith.interpreter` at the test interpreter and starts
// code-server on CS_URL with CS_WS (holding softmax.py and pyproject.toml) as the workspace.
//
// What a user would see, step by step (a screenshot for each, in CS_OUT):
//   0. the first run, with an interpreter that lacks tritonsmith: the install question (Install,
//      Choose interpreter, Not now) holds nothing: a command of the extension runs while it is
//      open, and choosing an interpreter that has tritonsmith starts the server;
//   1. softmax.py open, the Problems panel lists TS102 (and TS101);
//   2. Quick Fix on the TS102 range offers "Annotate 'BLOCK' as tl.constexpr (TS102)";
//   3. applying it changes the buffer and, once saved, the file ("BLOCK: tl.constexpr"),
//      and TS102 leaves the Problems panel;
//   4. `"tritonsmith.ignore": ["TS101"]` in .vscode/settings.json makes TS101 go away;
//   5. removing it brings TS101 back (the server is alive and the setting did it);
//   5b. with files.autoSave on (afterDelay): step 3's explicit save compiled and verified once, and
//      TS101 is one Problems entry naming the rule and the compiler; the rule's page opens
//      locally (a Markdown preview); reopened, the file shows it again; typing the fix at the
//      launch clears it before any save, and a pause in typing compiles the kernel again;
//      the autosave that follows compiles without verifying, and the file is verified once
//      the editor has been idle (tritonsmith.verifyAfterAutosave);
//   5f. fixes.py: the quick fixes of TS109 on a Python number (tl.cast) and of TS101 at a literal
//      launch value (the next power of two) give a file whose kernel compiles;
//   5g. library_softmax.py, a launcher returning (tensor, int, int, bool), verifies;
//   6. two_pass_softmax.py (examples/softmax.py: two passes over each row): "Tritonsmith: Optimize
//      this kernel…" with the offline proposer (on the CPU), its progress, the single-pass
//      rewrite in the diff editor, the search tree view, Accept (which hides the "Apply the faster
//      kernel?" question and says "applied" in the search view), the file without its loops,
//      saved, parsing, and verified again;
//   7. no warning or error notification from Tritonsmith came up during all that (the first
//      run's install question aside).
//
// Env: CS_URL, CS_WS, CS_TOOLS (folder with node_modules/playwright-core), CS_OUT (artifacts),
//      CS_USER_DATA (code-server's --user-data-dir, for logs on failure), CHROMIUM.
import { createRequire } from 'node:module';
import path from 'node:path';
import fs from 'node:fs';
import os from 'node:os';
import { spawnSync } from 'node:child_process';

const need = (k) => process.env[k] || (() => { throw new Error(`set ${k}`); })();
const TOOLS = need('CS_TOOLS');
const URL_BASE = need('CS_URL');
const WS = need('CS_WS');
const OUT = need('CS_OUT');
const USER_DATA = process.env.CS_USER_DATA || '';
const PYTHON = need('CS_PYTHON'); // has tritonsmith
const BARE_PYTHON = need('CS_BARE_PYTHON'); // the first run's interpreter: no tritonsmith
const EXE = process.env.CHROMIUM || '/usr/bin/chromium';
const require = createRequire(path.join(TOOLS, 'package.json'));
const { chromium } = require('playwright-core');

const FILE = 'softmax.py';
const FILE_PATH = path.join(WS, FILE);
const SEARCH_FILE = 'two_pass_softmax.py'; // examples/softmax.py: two passes over each row, with a harness
const SEARCH_PATH = path.join(WS, SEARCH_FILE);
const FIX_TITLE = "Annotate 'BLOCK' as tl.constexpr (TS102)";
const FIXED_TEXT = 'BLOCK: tl.constexpr';
const WAIT_MS = 60_000;

fs.mkdirSync(OUT, { recursive: true });
const t0 = Date.now();
const log = (msg) => console.log(`[e2e +${((Date.now() - t0) / 1000).toFixed(1)}s] ${msg}`);
const shots = [];
const norm = (s) => s.replace(/\u00a0/g, ' ');

// Chromium's crashpad writes ~/.config/chromium even with a temp profile: throwaway XDG dirs.
const xdg = fs.mkdtempSync(path.join(os.tmpdir(), 'ts-e2e-xdg-'));
const browser = await chromium.launch({
  executablePath: EXE,
  headless: true,
  env: { ...process.env, XDG_CONFIG_HOME: xdg, XDG_CACHE_HOME: xdg },
  args: [
    '--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-dev-shm-usage',
  ],
});
const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
const page = await context.newPage();
const consoleErrors = [];
page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
page.on('pageerror', (e) => consoleErrors.push('pageerror: ' + e.message));

async function shot(name) {
  await page.waitForTimeout(300); // let animations (menus, toasts) settle
  const p = path.join(OUT, name);
  await page.screenshot({ path: p });
  shots.push(p);
  log(`screenshot ${p}`);
}

/** Polls `fn` until it returns a truthy value; throws `what` with the last value otherwise. */
async function until(what, fn, timeout = WAIT_MS) {
  const end = Date.now() + timeout;
  let last;
  for (;;) {
    try { last = await fn(); if (last) return last; } catch (e) { last = e; }
    if (Date.now() > end) throw new Error(`timed out after ${timeout / 1000}s waiting for ${what} (last: ${String(last).slice(0, 300)})`);
    await page.waitForTimeout(250);
  }
}

const problems = page.locator('.markers-panel').first();
async function problemsText() {
  if (!(await problems.isVisible().catch(() => false))) return '';
  return norm(await problems.innerText()).replace(/\s+/g, ' ').trim();
}
async function showProblems() {
  if (await problems.isVisible().catch(() => false)) return;
  // The problems item of the status bar toggles the panel (the recipe's way); the command is
  // the fallback.
  await page.locator('#status\\.problems a, #status\\.problems').first().click().catch(() => {});
  try {
    await problems.waitFor({ timeout: 5_000 });
  } catch {
    await runCommand('Focus on Problems View', /Problems/);
    await problems.waitFor({ timeout: 15_000 });
  }
}
const editorLines = page.locator('.editor-instance .monaco-editor .view-lines').first();
const quickInput = page.locator('.quick-input-widget input');

async function runCommand(label, rowText = label) {
  await page.keyboard.press('F1');
  await quickInput.waitFor({ timeout: 10_000 });
  await quickInput.fill('>' + label);
  await page.locator('.quick-input-list .monaco-list-row', { hasText: rowText }).first().waitFor({ timeout: 10_000 });
  await page.keyboard.press('Enter');
}

/** Puts the cursor at 1-based line:column through Quick Open's ":line:column" mode. */
async function goTo(line, col) {
  await editorLines.click();
  await page.keyboard.press('Control+P');
  await quickInput.waitFor({ timeout: 10_000 });
  await quickInput.fill(`:${line}:${col}`);
  await page.waitForTimeout(200);
  await page.keyboard.press('Enter');
  await quickInput.waitFor({ state: 'hidden', timeout: 10_000 });
}

/** Every notification of the session (the notification center keeps them after the toasts hide). */
async function notifications() {
  await runCommand('Notifications: Show Notifications', /Show Notifications/);
  const center = page.locator('.notifications-center');
  await center.waitFor({ timeout: 10_000 });
  const items = center.locator('.notification-list-item');
  const out = [];
  for (let i = 0; i < await items.count(); i++) {
    const item = items.nth(i);
    const icon = (await item.locator('.notification-list-item-icon').first().getAttribute('class').catch(() => '')) || '';
    const severity = /error/.test(icon) ? 'error' : /warning/.test(icon) ? 'warning' : 'info';
    const text = norm(await item.locator('.notification-list-item-message').first().innerText()).replace(/\s+/g, ' ');
    out.push({ severity, text });
  }
  return out;
}

/** Writes .vscode/settings.json; the interpreter chosen in step 0 stays set. */
function writeWorkspaceSettings(obj) {
  fs.mkdirSync(path.join(WS, '.vscode'), { recursive: true });
  const tmp = path.join(WS, '.vscode', 'settings.json.tmp');
  fs.writeFileSync(tmp, JSON.stringify({ 'tritonsmith.interpreter': PYTHON, ...obj }, null, 2) + '\n');
  fs.renameSync(tmp, path.join(WS, '.vscode', 'settings.json'));
}

/** The "Tritonsmith" output channel as the extension host wrote it to disk, so far. */
function outputLog() {
  if (!USER_DATA) return '';
  const out = [];
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p); else if (/tritonsmith.*\.log$/i.test(e.name)) out.push(fs.readFileSync(p, 'utf8'));
    }
  };
  try { walk(path.join(USER_DATA, 'logs')); } catch { return ''; }
  return out.join('\n');
}
const count = (text, re) => (text.match(re) || []).length;

function dumpLogs() {
  if (!USER_DATA) return;
  const files = [];
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p); else files.push(p);
    }
  };
  try { walk(path.join(USER_DATA, 'logs')); } catch { return; }
  // The "Tritonsmith" output channel: exthost1/<extension id>/Tritonsmith.log for a log
  // channel, exthost1/output_logging_*/N-Tritonsmith.log for a plain one.
  const pick = files.filter((f) => /tritonsmith.*\.log$/i.test(path.basename(f)));
  if (!pick.length) console.log('--- no "Tritonsmith" output channel log found (did the extension activate?)');
  for (const f of pick) {
    console.log(`--- output channel log ${f} (last 80 lines):`);
    console.log(fs.readFileSync(f, 'utf8').split('\n').slice(-80).join('\n'));
  }
  for (const f of files.filter((f) => /(remote)?exthost\.log$/.test(f))) {
    const lines = fs.readFileSync(f, 'utf8').split('\n').filter((l) => /error|warn|tritonsmith|activat/i.test(l));
    console.log(`--- extension host log ${f} (errors, warnings, tritonsmith; last 40):`);
    console.log(lines.slice(-40).join('\n'));
  }
}

/**
 * Opens the Quick Fix menu at 1-based line:column (Ctrl+., else the command, again until the
 * server offers `title`), takes a screenshot `shotName` when given, and applies `title` with the
 * keyboard, as a user would (the menu opens with its first action focused).
 */
async function quickFix(line, col, title, shotName) {
  await goTo(line, col);
  const fixRow = page.locator('.action-widget .monaco-list-row', { hasText: title }).first();
  for (let attempt = 0, end = Date.now() + WAIT_MS; ; attempt++) {
    if (attempt % 2 === 0) {
      await page.keyboard.press('Control+.');
    } else {
      await runCommand('Quick Fix...', /Quick Fix/).catch(() => {});
    }
    try {
      await fixRow.waitFor({ timeout: 5_000 });
      break;
    } catch {
      const seen = norm(await page.locator('.action-widget').first().innerText({ timeout: 1_000 }).catch(() => '(no menu)'));
      if (Date.now() > end) throw new Error(`no "${title}" in the Quick Fix menu after ${WAIT_MS / 1000}s; it shows: ${seen.replace(/\s+/g, ' ')}`);
      log(`Quick Fix attempt ${attempt + 1} did not offer the fix yet (menu: ${seen.replace(/\s+/g, ' ')}); again`);
      await page.keyboard.press('Escape');
      await goTo(line, col);
    }
  }
  log(`quick fix menu: ${norm(await page.locator('.action-widget').first().innerText()).replace(/\s+/g, ' ')}`);
  if (shotName) await shot(shotName);
  const titles = (await page.locator('.action-widget .monaco-list-row.action').allInnerTexts()).map(norm);
  if (!titles.some((t) => t.includes(title))) throw new Error(`"${title}" not among the actions ${JSON.stringify(titles)}`);
  const focused = page.locator('.action-widget .monaco-list-row.focused');
  for (let i = 0; i < titles.length && !norm(await focused.innerText({ timeout: 1_000 }).catch(() => '')).includes(title); i++) {
    await page.keyboard.press('ArrowDown');
    await page.waitForTimeout(50);
  }
  if (!norm(await focused.innerText({ timeout: 1_000 }).catch(() => '')).includes(title)) {
    throw new Error(`could not focus "${title}" in the Quick Fix menu ${JSON.stringify(titles)}`);
  }
  await page.keyboard.press('Enter');
}

/** Saves the active editor (Ctrl+S, else the command) until `saved()` holds. */
async function save(what, saved) {
  await editorLines.click();
  await page.keyboard.press('Control+S');
  try {
    await until(`${what} (Ctrl+S)`, async () => saved(), 5_000);
  } catch {
    log('Ctrl+S did not save; using the command "File: Save"');
    await runCommand('File: Save', /^File: Save/);
    await until(`${what} after "File: Save"`, async () => saved(), 15_000);
  }
}

/** The explorer's row of the file (or folder) named exactly `name`. */
function explorerRow(name) {
  const exactly = new RegExp(`^\\s*${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\s*$`);
  return page.locator('.explorer-folders-view .monaco-list-row').filter({ hasText: exactly }).first();
}

/** Opens `name` from the explorer as the only editor and waits for `text` in it. */
async function openOnly(name, text) {
  await runCommand('View: Close All Editors', /Close All Editors/);
  await page.locator('.editor-instance .monaco-editor').first().waitFor({ state: 'detached', timeout: 10_000 }).catch(() => {});
  const row = explorerRow(name);
  await row.waitFor({ timeout: WAIT_MS });
  await row.dblclick();
  await page.locator('.editor-instance .monaco-editor .view-lines', { hasText: text }).first().waitFor({ timeout: 30_000 });
}

/** The code lens titles shown in the editor now. */
async function lensTitles() {
  return (await page.locator('.monaco-editor .codelens-decoration').allInnerTexts().catch(() => [])).map((t) => norm(t).trim());
}

let ok = false;
let step = 'open the workbench';
try {
  // ---------------------------------------------------------------- 1. diagnostics
  await page.goto(`${URL_BASE}/?folder=${encodeURIComponent(WS)}`, { waitUntil: 'domcontentloaded' });
  await page.waitForSelector('.monaco-workbench', { timeout: WAIT_MS });

  // ---------------------------------------------------------------- 0. first run
  step = 'the first run: a Python file opened, the install question for an interpreter without tritonsmith';
  const firstRow = explorerRow(FILE);
  await firstRow.waitFor({ timeout: WAIT_MS });
  await firstRow.dblclick(); // the extension activates on a Python file
  const question = page.locator('.notification-toast', { hasText: 'is not installed in' }).first();
  await question.waitFor({ timeout: WAIT_MS });
  const buttons = (await question.locator('.monaco-button').allInnerTexts()).map((t) => norm(t).trim());
  log(`install question: "${norm(await question.locator('.notification-list-item-message').innerText()).trim()}" ${JSON.stringify(buttons)}`);
  for (const wanted of ['Install', 'Choose interpreter', 'Not now']) {
    if (!buttons.includes(wanted)) throw new Error(`the install question has no "${wanted}" button: ${JSON.stringify(buttons)}`);
  }
  if (!(await page.locator('.explorer-folders-view').first().isVisible().catch(() => false))) {
    await runCommand('View: Show Explorer', /Show Explorer/).catch(() => {});
  }
  await shot('00-first-run-question.png');
  step = 'a command of the extension runs while the question is open';
  await runCommand('Tritonsmith: Show output', /Tritonsmith: Show output/);
  await until('the Tritonsmith output channel', async () => norm(await page.locator('.panel .monaco-editor .view-lines').first()
    .innerText().catch(() => '')).includes('not importable'), 20_000);
  if (!(await question.isVisible().catch(() => false))) log('(the question toast hid; it stays in the notification center)');
  step = 'choosing an interpreter with tritonsmith starts the server';
  writeWorkspaceSettings({});
  log(`wrote .vscode/settings.json: {"tritonsmith.interpreter": "${PYTHON}"}`);
  await until('"Interpreter: <the .venv python>" in the output channel', async () =>
    outputLog().includes(`Interpreter: ${PYTHON} (from setting)`), WAIT_MS);
  await runCommand('View: Hide Panel', /Hide Panel/).catch(() => {});
  const notNow = question.locator('.monaco-button', { hasText: 'Not now' }).first();
  if (await notNow.isVisible().catch(() => false)) await notNow.click();

  step = `open ${FILE} from the explorer`;
  const row = explorerRow(FILE);
  await row.waitFor({ timeout: WAIT_MS });
  await row.dblclick(); // double click: a pinned editor, not a preview
  await page.locator('.editor-instance .monaco-editor .view-lines', { hasText: 'softmax_kernel' }).first()
    .waitFor({ timeout: 30_000 });
  log(`editor shows ${FILE}`);

  step = 'see TS102 in the Problems panel';
  await showProblems();
  await until('TS102 and TS101 in the Problems panel', async () => {
    const t = await problemsText();
    return t.includes('TS102') && t.includes('TS101') && t;
  });
  log(`Problems panel: ${(await problemsText()).slice(0, 400)}`);
  await page.locator('.monaco-editor .squiggly-error').first().waitFor({ state: 'attached', timeout: 10_000 });
  const status = await page.locator('.statusbar-item', { hasText: /tritonsmith/i }).first().innerText({ timeout: 2_000 }).catch(() => '');
  log(`status bar item: ${status ? norm(status).trim() : '(none with "Tritonsmith")'}`);
  await shot('01-problems-ts102.png');

  // ---------------------------------------------------------------- 2. quick fix
  step = `offer the quick fix "${FIX_TITLE}"`;
  const src = fs.readFileSync(FILE_PATH, 'utf8').split('\n');
  const li = src.findIndex((l) => l.includes('tl.arange(0, BLOCK)'));
  if (li < 0) throw new Error(`no "tl.arange(0, BLOCK)" line in ${FILE_PATH}`);
  await quickFix(li + 1, src[li].indexOf('BLOCK') + 1, FIX_TITLE, '02-quick-fix-menu.png');
  await until(`"${FIXED_TEXT}" in the editor`, async () => norm(await editorLines.innerText()).includes(FIXED_TEXT));
  log('editor text changed');
  await save(`"${FIXED_TEXT}" in ${FILE_PATH} on disk`, () => fs.readFileSync(FILE_PATH, 'utf8').includes(FIXED_TEXT));
  const saved = fs.readFileSync(FILE_PATH, 'utf8').split('\n').find((l) => l.includes(FIXED_TEXT));
  log(`saved: ${saved.trim()}`);
  step = 'see TS102 leave the Problems panel after the fix';
  await until('TS102 to leave the Problems panel (TS101 staying)', async () => {
    const t = await problemsText();
    return !t.includes('TS102') && t.includes('TS101');
  });
  await shot('03-quick-fix-applied.png');

  // ---------------------------------------------------------------- 3. settings
  step = 'ignore TS101 through the workspace setting tritonsmith.ignore';
  writeWorkspaceSettings({ 'tritonsmith.ignore': ['TS101'] });
  log('wrote .vscode/settings.json: {"tritonsmith.ignore": ["TS101"]}');
  await until('TS101 to leave the Problems panel', async () => {
    const t = await problemsText();
    return t && !t.includes('TS101') && t;
  });
  log(`Problems panel: ${await problemsText()}`);
  await page.locator('.monaco-editor .squiggly-error').first().waitFor({ state: 'detached', timeout: 10_000 });
  // Show the setting next to the kernel so that the screenshot tells the story (cosmetic).
  try {
    await editorLines.click();
    await page.keyboard.press('Control+P');
    await quickInput.waitFor({ timeout: 10_000 });
    await quickInput.fill('.vscode/settings.json');
    await page.locator('.quick-input-list .monaco-list-row', { hasText: 'settings.json' }).first().waitFor({ timeout: 10_000 });
    await page.keyboard.press('Control+Enter'); // open to the side
    await page.locator('.editor-instance .monaco-editor .view-lines', { hasText: 'tritonsmith.ignore' }).first()
      .waitFor({ timeout: 10_000 });
  } catch (e) {
    log(`(could not show .vscode/settings.json beside the kernel: ${e.message.split('\n')[0]})`);
    await page.keyboard.press('Escape');
  }
  await shot('04-setting-ignores-ts101.png');

  step = 'see TS101 come back when the setting is removed';
  writeWorkspaceSettings({ 'tritonsmith.ignore': [] });
  await until('TS101 back in the Problems panel', async () => (await problemsText()).includes('TS101'));
  await shot('05-setting-removed-ts101-back.png');

  // ---------------------------------------------------------------- 5b. save, compile, autosave
  const VERIFYING = /softmax\.py: compiling for [^\n]* and verifying/g;
  const COMPILING_ONLY = /softmax\.py: compiling for [\w, ]+$/gm;
  step = 'the explicit save compiles and verifies softmax.py once';
  await until('"softmax.py: compiling for sm_90 and verifying" in the output channel', async () => count(outputLog(), VERIFYING) >= 1, 60_000);
  step = 'one Problems entry for TS101, naming the rule and the compiler';
  const ts101Rows = page.locator('.markers-panel .monaco-list-row', { hasText: 'TS101' });
  await until('TS101 confirmed by the compiler ("tritonsmith, tritonsmith-verify")', async () => {
    const t = await problemsText();
    return t.includes('tritonsmith, tritonsmith-verify') && t;
  }, 180_000);
  const rows = await ts101Rows.count();
  log(`Problems panel after the save's compile: ${await problemsText()}`);
  if (rows !== 1) throw new Error(`TS101 is listed ${rows} times after the compile (one mistake, one entry)`);
  if (count(outputLog(), VERIFYING) !== 1) throw new Error(`one explicit save verified ${count(outputLog(), VERIFYING)} times`);
  await shot('05b-one-entry-rule-and-compiler.png');

  step = "open TS101's rule page from the diagnostic (locally, as a Markdown preview)";
  // settings.json is open beside the kernel (step 4): back to one editor, the kernel.
  await runCommand('View: Close All Editors', /Close All Editors/);
  await page.locator('.editor-instance .monaco-editor').first().waitFor({ state: 'detached', timeout: 10_000 }).catch(() => {});
  await explorerRow(FILE).dblclick();
  await page.locator('.editor-instance .monaco-editor .view-lines', { hasText: 'softmax_kernel' }).first()
    .waitFor({ timeout: 30_000 });
  const cur = fs.readFileSync(FILE_PATH, 'utf8').split('\n');
  const aline = cur.findIndex((l) => l.includes('tl.arange(0, BLOCK)'));
  await goTo(aline + 1, cur[aline].indexOf('tl.arange') + 3);
  await runCommand('Tritonsmith: Open rule documentation', /Open rule documentation/);
  const previewTab = page.locator('.tabs-container .tab', { hasText: /Preview/ }).first();
  await previewTab.waitFor({ timeout: 20_000 });
  const pageFrame = await until('the rule page in the preview', async () => {
    for (const frame of page.frames()) {
      const body = await frame.locator('body').innerText({ timeout: 500 }).catch(() => '');
      if (/TS101/.test(body) && /power of (two|2)/i.test(body)) return frame;
    }
    return false;
  }, 20_000);
  log(`rule page: tab "${norm(await previewTab.innerText()).trim()}", ${(await pageFrame.locator('body').innerText()).split('\n')[0]}`);
  await shot('05c-rule-page.png');
  await runCommand('View: Close Editor', /^View: Close Editor$/).catch(() => page.keyboard.press('Control+W'));

  step = 'the compile finding is back on reopening the file (its text unchanged)';
  await until('TS101 from the rule and the compiler again', async () => {
    const t = await problemsText();
    return t.includes('tritonsmith, tritonsmith-verify') && t;
  }, 15_000);
  step = 'typing the fix at the launch clears the compiler\'s TS101 before any save';
  const lines = fs.readFileSync(FILE_PATH, 'utf8').split('\n');
  const launchRow = lines.findIndex((l) => l.includes('BLOCK=1000'));
  if (launchRow < 0) throw new Error('no BLOCK=1000 launch in softmax.py');
  const savesBefore = count(outputLog(), /autosave of /g);
  await goTo(launchRow + 1, lines[launchRow].indexOf('1000') + 1);
  await page.keyboard.press('Shift+End');
  await page.keyboard.type('1024)');
  const typedAt = Date.now();
  await until('TS101 to leave the Problems panel', async () => {
    const t = await problemsText();
    return t !== '' && !t.includes('TS101') && t;
  }, 10_000);
  const onDiskNow = fs.readFileSync(FILE_PATH, 'utf8');
  log(`TS101 gone ${Date.now() - typedAt} ms after typing; on disk still BLOCK=1000: ${onDiskNow.includes('BLOCK=1000')}`);
  if (!onDiskNow.includes('BLOCK=1000')) throw new Error('the file was saved before TS101 left the Problems panel');
  // The kernel's lens while the edit is checked: kept (marked "edited since"), never blank.
  await page.keyboard.press('Control+Home'); // the lens above the kernel in view (drawn after the scroll)
  // Drawn means drawn with its text: after a scroll the editor may lay out an empty lens row
  // first and fill it on the next frame (a busy machine showed one such sample).
  await until('a lens drawn above the kernel', async () => (await lensTitles()).some((t) => t.length > 0), 3_000);
  const lensSamples = [];
  for (let i = 0; i < 12; i++) {
    lensSamples.push([Date.now() - typedAt, (await lensTitles()).join(' | ') || '(none)']);
    await page.waitForTimeout(250);
  }
  log(`kernel lens after the edit: ${JSON.stringify(lensSamples)}`);
  if (lensSamples.some(([, title]) => title === '(none)')) throw new Error('the kernel lens went blank after the edit');
  await shot('05d-typed-fix-before-save.png');
  step = 'a pause in typing compiles the kernel again from the unsaved text';
  await until('"compiled while typing ... softmax_kernel" in the output channel', async () =>
    /softmax\.py: compiled while typing for sm_90: softmax_kernel .*: ok/.test(outputLog()), 10_000);

  step = 'the autosave compiles without verifying';
  await until('the autosave (files.autoSave = afterDelay)', async () => fs.readFileSync(FILE_PATH, 'utf8').includes('BLOCK=1024'), 15_000);
  await until('"autosave of ...: compiling" in the output channel', async () => count(outputLog(), /autosave of /g) > savesBefore, 15_000);
  await until('the autosave\'s compile-only job', async () => count(outputLog(), COMPILING_ONLY) >= 1, 15_000);
  if (count(outputLog(), VERIFYING) !== 1) throw new Error('the autosave verified the file');
  step = 'verified once the editor has been idle after the autosave';
  await until('a verification after the idle delay', async () => count(outputLog(), VERIFYING) >= 2, 30_000);
  await page.waitForTimeout(2_000);
  const verifies = count(outputLog(), VERIFYING);
  log(`verifications so far: ${verifies} (one explicit save, one idle period after an autosave)`);
  if (verifies !== 2) throw new Error(`expected 2 verifications, the output shows ${verifies}`);
  await shot('05e-autosaved-and-verified.png');

  // ---------------------------------------------------------------- 5f. fixes that compile
  step = "TS109's fix on a Python number and TS101's at a literal launch value";
  const FIXES = path.join(WS, 'fixes.py');
  await openOnly('fixes.py', 'row_max_kernel');
  await showProblems();
  await until('TS109 and TS101 for fixes.py', async () => {
    const t = await problemsText();
    return t.includes('TS109') && t.includes('TS101') && t;
  });
  let fixLines = fs.readFileSync(FIXES, 'utf8').split('\n');
  const castRow = fixLines.findIndex((l) => l.includes('tl.float32(-float'));
  await quickFix(castRow + 1, fixLines[castRow].indexOf('tl.float32') + 4, 'Use tl.cast(x, tl.float32) (TS109)', '11-ts109-fix.png');
  await until('tl.cast in the editor', async () => norm(await editorLines.innerText()).includes('tl.cast(-float("inf"), tl.float32)'));
  fixLines = fs.readFileSync(FIXES, 'utf8').split('\n');
  const launchLine = fixLines.findIndex((l) => l.includes('BLOCK=1000'));
  await quickFix(launchLine + 1, fixLines[launchLine].indexOf('1000') + 2, 'Round BLOCK up to 1024', '12-ts101-fix.png');
  await until('BLOCK=1024 in the editor', async () => norm(await editorLines.innerText()).includes('BLOCK=1024'));
  const compilesBefore = count(outputLog(), /fixes\.py: 1 of 1 kernels compiled/g);
  await save('both fixes in fixes.py on disk', () => {
    const t = fs.readFileSync(FIXES, 'utf8');
    return t.includes('tl.cast(-float("inf"), tl.float32)') && t.includes('cdiv(n, 1024),)](x, out, n, BLOCK=1024)');
  });
  step = 'the fixed file compiles, and no rule finds anything in it';
  await until('"fixes.py: 1 of 1 kernels compiled" in the output channel', async () =>
    count(outputLog(), /fixes\.py: 1 of 1 kernels compiled/g) > compilesBefore, 120_000);
  await until('no TS109 or TS101 left', async () => {
    const t = await problemsText();
    return !t.includes('TS109') && !t.includes('TS101') && (t || 'empty');
  }, 15_000);
  log(`fixes.py lenses: ${JSON.stringify(await lensTitles())}`);
  await shot('13-fixes-compiled.png');

  // ---------------------------------------------------------------- 5g. a library launcher
  step = 'a launcher returning (tensor, int, int, bool) verifies';
  await openOnly('library_softmax.py', '_softmax_forward');
  await editorLines.click();
  const libraryBefore = count(outputLog(), /library_softmax\.py: .*verified · interpreter/g);
  await runCommand('Tritonsmith: Verify now', /Verify now/);
  const libraryLine = await until('"library_softmax.py: ... verified" in the output channel', async () => {
    const lines = outputLog().split('\n').filter((l) => /library_softmax\.py: .*(verified|FAILED|NOT VERIFIED)/.test(l));
    return count(outputLog(), /library_softmax\.py: .*verified · interpreter/g) > libraryBefore ? lines[lines.length - 1]
      : (lines.some((l) => /FAILED|NOT VERIFIED/.test(l)) ? Promise.reject(new Error(lines[lines.length - 1])) : false);
  }, 180_000);
  log(`library launcher: ${libraryLine.slice(0, 300)}`);
  await until('the "verified" lens above the launcher', async () =>
    (await lensTitles()).some((t) => t.startsWith('verified · interpreter')), 20_000).catch((e) => log(`(${e.message})`));
  log(`library_softmax.py lenses: ${JSON.stringify(await lensTitles())}`);
  await shot('14-library-launcher-verified.png');

  // ---------------------------------------------------------------- 4. optimize and review
  step = 'set up a search: offline proposer, budget 4, on the CPU';
  writeWorkspaceSettings({
    'tritonsmith.ignore': [],
    'tritonsmith.proposer': 'offline',
    'tritonsmith.budget': 4,
    'tritonsmith.device': 'cpu',
    'tritonsmith.verifyOnSave': 'off',
  });
  step = `open ${SEARCH_FILE} from the explorer`;
  // One editor group with one editor: goTo() and the checks below read "the" editor.
  // And no Problems panel: room for the diff editor and the search view.
  await runCommand('View: Hide Panel', /Hide Panel/).catch(() => page.keyboard.press('Escape'));
  await openOnly(SEARCH_FILE, 'softmax_kernel');
  const searchSrc = fs.readFileSync(SEARCH_PATH, 'utf8').split('\n');
  const inKernel = searchSrc.findIndex((l) => l.includes('tl.program_id'));
  if (inKernel < 0) throw new Error(`no tl.program_id line in ${SEARCH_PATH}`);
  const TWO_PASSES = 'for start in range(0, n_cols, BLOCK_SIZE):';

  step = 'run "Tritonsmith: Optimize this kernel…" and pick the offline proposer and the auto mode';
  // The proposer pick: its first row is "settings default" (placeholders are not text).
  const proposerPick = page.locator('.quick-input-list .monaco-list-row', { hasText: 'settings default' }).first();
  for (let attempt = 0, end = Date.now() + WAIT_MS; ; attempt++) {
    await goTo(inKernel + 1, 5);
    await runCommand('Tritonsmith: Optimize this kernel', /Optimize this kernel/);
    try {
      await proposerPick.waitFor({ timeout: 8_000 });
      break;
    } catch {
      // The server answers code actions once it has indexed the file (and imported triton).
      const toasts = norm(await page.locator('.notifications-toasts').first().innerText({ timeout: 1_000 }).catch(() => ''));
      if (Date.now() > end) throw new Error(`no proposer pick after ${WAIT_MS / 1000}s; notifications: ${toasts.replace(/\s+/g, ' ')}`);
      log(`optimize attempt ${attempt + 1}: no proposer pick yet (${toasts.replace(/\s+/g, ' ').slice(0, 200)}); again`);
      await page.keyboard.press('Escape');
      await page.waitForTimeout(1_000);
    }
  }
  await shot('06-optimize-proposer-pick.png');
  await quickInput.fill('offline');
  await page.locator('.quick-input-list .monaco-list-row', { hasText: 'offline' }).first().waitFor({ timeout: 5_000 });
  await page.keyboard.press('Enter');
  await page.locator('.quick-input-list .monaco-list-row', { hasText: 'refinement' }).first().waitFor({ timeout: 10_000 });
  log(`mode pick: ${norm(await page.locator('.quick-input-list').first().innerText()).replace(/\s+/g, ' ')}`);
  await quickInput.fill('auto');
  await page.locator('.quick-input-list .monaco-list-row', { hasText: 'auto' }).first().waitFor({ timeout: 5_000 });
  await page.keyboard.press('Enter');
  const searchStarted = Date.now();

  step = 'watch the search progress (notification and status bar)';
  const progressToast = page.locator('.notification-toast', { hasText: 'Optimizing softmax_kernel' }).first();
  const activity = page.locator('.statusbar-item', { hasText: /softmax_kernel:/ }).first();
  const diffEditor = page.locator('.monaco-diff-editor').first();
  const seenProgress = await until('the search progress, or its result', async () => {
    if (await progressToast.isVisible().catch(() => false)) return 'notification';
    if (await diffEditor.isVisible().catch(() => false)) return 'result';
    return false;
  }, 90_000);
  if (seenProgress === 'notification') {
    const text = norm(await progressToast.innerText().catch(() => '')).replace(/\s+/g, ' ');
    log(`progress notification: ${text}`);
    await shot('07-optimize-progress.png');
  } else {
    log('the search finished before its progress notification was seen');
  }
  log(`status bar: ${norm(await activity.innerText({ timeout: 2_000 }).catch(() => '(no activity item)')).trim()}`);

  step = 'see the result in the diff editor (current file against the faster variant)';
  await diffEditor.waitFor({ timeout: 120_000 });
  const diffTab = page.locator('.tabs-container .tab', { hasText: 'current ↔ faster' }).first();
  await diffTab.waitFor({ timeout: 10_000 });
  log(`diff editor: "${norm(await diffTab.innerText()).trim()}" after ${((Date.now() - searchStarted) / 1000).toFixed(1)}s`);
  await page.locator('.monaco-diff-editor .editor.modified .view-lines', { hasText: 'next_power_of_2' }).first()
    .waitFor({ timeout: 10_000 }).catch(() => {});
  const reviewToast = page.locator('.notification-toast', { hasText: 'Apply the faster kernel?' }).first();
  await reviewToast.waitFor({ timeout: 10_000 }).catch(() => log('(the review notification is not showing)'));
  log(`status bar: ${norm(await activity.innerText({ timeout: 2_000 }).catch(() => '(no activity item)')).trim()}`);
  await shot('08-diff-editor.png');

  step = 'open the search view and see the tree';
  await runCommand('Tritonsmith: Show search tree', /Show search tree/);
  const treeFrame = await until('the search tree in the webview', async () => {
    for (const frame of page.frames()) {
      if (await frame.locator('svg.tree g.node').count().catch(() => 0)) return frame;
    }
    return false;
  }, 30_000);
  const nodeCount = await treeFrame.locator('svg.tree g.node').count();
  const header = norm(await treeFrame.locator('header h1').innerText()).trim();
  log(`search view: "${header}", ${nodeCount} nodes`);
  // The prediction is named by its GPU model (sm_90: the H100 SXM).
  if (!/predicted H100 SXM time/.test(header)) throw new Error(`the search view does not say "predicted H100 SXM time": ${header}`);
  await treeFrame.locator('svg.tree g.node.best').first().click();
  const details = norm(await treeFrame.locator('#details').innerText()).trim();
  log(`clicked the best node: ${details.replace(/\s+/g, ' ')}`);
  await shot('09-search-view.png');

  step = 'accept the faster kernel (the single pass) and see the file change';
  if (!fs.readFileSync(SEARCH_PATH, 'utf8').includes(TWO_PASSES)) throw new Error(`${SEARCH_FILE} changed before accept`);
  await treeFrame.locator('button[data-action="accept"]').click();
  // The edit goes to the buffer; the diff editor closes. Check the editor, then save.
  // (The editor renders the lines in view: the kernel's; the launch is checked on disk.)
  const searchEditor = page.locator('.editor-instance .monaco-editor .view-lines', { hasText: 'def softmax_kernel' }).first();
  await until('the accepted kernel in the editor (one pass)', async () => {
    const t = norm(await searchEditor.innerText().catch(() => ''));
    return t.includes('cols = offsets') && !t.includes(TWO_PASSES) && t;
  }, 30_000);
  await searchEditor.click();
  await save(`${SEARCH_FILE} saved without its loops`, () => {
    const t = fs.readFileSync(SEARCH_PATH, 'utf8');
    return !t.includes(TWO_PASSES) && t.includes('next_power_of_2(n_cols)');
  });
  step = 'the accepted file parses (what was verified is what was written)';
  const parsed = spawnSync(PYTHON, ['-c', 'import ast, sys; ast.parse(open(sys.argv[1]).read())', SEARCH_PATH], { encoding: 'utf8' });
  if (parsed.status !== 0) throw new Error(`${SEARCH_FILE} does not parse after Accept: ${parsed.stderr}`);
  step = 'the accepted result: the question is gone, the search view says "applied"';
  await until('the "Apply the faster kernel?" notification to close', async () => !(await reviewToast.isVisible().catch(() => false)), 10_000);
  const outcome = await until('"applied" in the search view', async () => {
    for (const frame of page.frames()) { // the view may have been redrawn in a new frame
      const t = norm(await frame.locator('.decided').first().innerText({ timeout: 500 }).catch(() => ''));
      if (/applied \d/.test(t)) return t;
    }
    return false;
  }, 10_000);
  log(`search view after accept: ${outcome}`);
  const launch = fs.readFileSync(SEARCH_PATH, 'utf8').split('\n').find((l) => l.includes('softmax_kernel['));
  log(`saved: ${launch.trim()}`);
  await goTo(fs.readFileSync(SEARCH_PATH, 'utf8').split('\n').findIndex((l) => l.includes('cols = offsets')) + 1, 5).catch(() => {});
  await shot('10-accepted.png');
  step = 'the accepted file verifies when saved';
  writeWorkspaceSettings({ 'tritonsmith.proposer': 'offline', 'tritonsmith.device': 'cpu', 'tritonsmith.verifyOnSave': 'verify' });
  const acceptedBefore = count(outputLog(), /two_pass_softmax\.py: 1 of 1 kernels compiled; verified · interpreter/g);
  await page.waitForTimeout(1_000); // the server has the setting
  // A user's note at the end of the file, and a save (an explicit one verifies at once; an
  // autosave first would verify after the idle delay). The file alone, without the search view.
  await openOnly(SEARCH_FILE, 'softmax_kernel');
  await editorLines.click();
  await page.keyboard.press('Control+End');
  await page.keyboard.type('\n# accepted: one pass over each row\n');
  await save(`${SEARCH_FILE} saved with the note`, () => fs.readFileSync(SEARCH_PATH, 'utf8').includes('# accepted: one pass'));
  await until('"two_pass_softmax.py: 1 of 1 kernels compiled; verified" in the output channel', async () => {
    const lines = outputLog().split('\n').filter((l) => /two_pass_softmax\.py: \d+ of/.test(l));
    if (count(outputLog(), /two_pass_softmax\.py: 1 of 1 kernels compiled; verified · interpreter/g) > acceptedBefore) return true;
    const last = lines[lines.length - 1] || '';
    if (/FAILED|NOT VERIFIED/.test(last) && count(outputLog(), /two_pass_softmax\.py: \d+ of/g) > 0) throw new Error(last);
    return false;
  }, 180_000);
  await page.keyboard.press('Control+Home');
  await page.waitForTimeout(1_000);
  log(`${SEARCH_FILE} lenses: ${JSON.stringify(await lensTitles())}`);
  await shot('10b-accepted-and-verified.png');

  // ---------------------------------------------------------------- 4b. the workspace and the page
  step = 'the state folder .tritonsmith/ is not in the explorer';
  if (!fs.existsSync(path.join(WS, '.tritonsmith'))) throw new Error('no .tritonsmith/ in the workspace after the saves');
  const stateRows = await explorerRow('.tritonsmith').count();
  if (stateRows) throw new Error('.tritonsmith/ shows in the explorer');
  step = "the extension page's images load from the package";
  await runCommand('Extensions: Show Enabled Extensions', /Show Enabled Extensions/);
  const item = page.locator('.extensions-viewlet .monaco-list-row', { hasText: 'Tritonsmith' }).first();
  await item.waitFor({ timeout: 20_000 });
  await item.click();
  const images = await until('the README images on the extension page', async () => {
    for (const frame of page.frames()) {
      const found = await frame.locator('img[alt*="quick fix"], img[alt*="search tree"], img[alt*="diff"]').evaluateAll(
        (all) => all.map((img) => ({ alt: img.alt, loaded: img.complete && img.naturalWidth > 0 }))).catch(() => []);
      if (found.length >= 3 && found.every((img) => img.loaded)) return found;
    }
    return false;
  }, 30_000);
  log(`extension page images: ${JSON.stringify(images)}`);
  await shot('15-extension-page.png');

  // ---------------------------------------------------------------- 5. no warnings
  step = 'no warning or error notification from Tritonsmith during the run';
  const notes = await notifications();
  for (const n of notes) log(`notification (${n.severity}): ${n.text}`);
  const firstRun = (n) => n.text.includes(`is not installed in ${BARE_PYTHON}`); // step 0's question
  const bad = notes.filter((n) => n.severity !== 'info' && /tritonsmith/i.test(n.text) && !firstRun(n));
  if (bad.length) {
    await shot('99-unexpected-notifications.png');
    throw new Error(`Tritonsmith showed ${bad.length} warning/error notification(s): ` +
      bad.map((n) => `[${n.severity}] ${n.text}`).join(' | '));
  }
  ok = true;
} catch (e) {
  console.error(`E2E FAILED at step "${step}": ${e.message}`);
  console.error(`Problems panel: ${await problemsText().catch(() => '(unreadable)') || '(not visible)'}`);
  const toasts = await page.locator('.notifications-toasts').first().innerText({ timeout: 1_000 }).catch(() => '');
  if (toasts.trim()) console.error(`notifications: ${toasts.replace(/\s+/g, ' ')}`);
  console.error(`${FILE} on disk:\n${fs.readFileSync(FILE_PATH, 'utf8')}`);
  if (fs.existsSync(SEARCH_PATH)) console.error(`${SEARCH_FILE} on disk:\n${fs.readFileSync(SEARCH_PATH, 'utf8')}`);
  const failShot = path.join(OUT, 'failure.png');
  await page.screenshot({ path: failShot }).then(() => shots.push(failShot)).catch(() => {});
  if (consoleErrors.length) {
    console.error(`browser console errors (${consoleErrors.length}), first 5:`);
    for (const m of consoleErrors.slice(0, 5)) console.error('  ' + m.slice(0, 300));
  }
  dumpLogs();
} finally {
  await browser.close().catch(() => {});
  fs.rmSync(xdg, { recursive: true, force: true });
}
console.log('screenshots:');
for (const s of shots) console.log('  ' + s);
log(ok ? 'PASSED' : 'FAILED');
process.exit(ok ? 0 : 1);

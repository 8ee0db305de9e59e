// End-to-end tests of the dashboard (docs/api/dashboard.md §5), run by `make e2e` through
// scripts/e2e.sh, which starts four real brokers on a fresh database (A: auth off; B: HS256 auth
// on; C: auth off, killed by the "broker stopped" test; D: auth off, listing the "another origin"
// test's page in CORS_ALLOWED_ORIGINS) and passes their URLs. This file seeds data through the HTTP API, drives headless Chromium
// with playwright-core and checks every page in both themes, the actions against the API, the
// auth matrix, keyboard-only runs, scale data and axe-core, and writes screenshots of every page
// (1440×900 and 390×844, light and dark) to E2E_OUT.
import { chromium } from 'playwright-core';
import { createHmac, randomUUID } from 'node:crypto';
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const A = process.env.E2E_URL; // auth off
const B = process.env.E2E_AUTH_URL; // auth on
const C = process.env.E2E_STOP_URL; // auth off; this file kills it (SIGKILL) in the "broker stopped" test
const C_PID = Number(process.env.E2E_STOP_PID);
const D = process.env.E2E_CORS_URL; // auth off; CORS_ALLOWED_ORIGINS lists the foreign page's origin
const FOREIGN_PORT = Number(process.env.E2E_FOREIGN_PORT); // where the "another origin" test serves its page
const SECRET = process.env.E2E_SECRET;
const DB_URL = process.env.E2E_DB_URL; // the brokers' database, for the held-snapshot test (psql)
const OUT = process.env.E2E_OUT;
const ONLY = process.env.E2E_ONLY || '';
const FIRST_DATA_MS = Number(process.env.E2E_FIRST_DATA_MS || 1000); // docs/api/dashboard.md §4.5
if (!A || !B || !C || !C_PID || !D || !FOREIGN_PORT || !SECRET || !OUT || !DB_URL) {
  console.error('run through scripts/e2e.sh (make e2e): E2E_URL, E2E_AUTH_URL, E2E_STOP_URL, E2E_STOP_PID, E2E_CORS_URL, E2E_FOREIGN_PORT, E2E_SECRET, E2E_OUT and E2E_DB_URL are needed');
  process.exit(2);
}
mkdirSync(OUT, { recursive: true });
const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

// ---------- HTTP helpers ----------

async function call(base, path, { method = 'GET', body, token } = {}) {
  const headers = {};
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (token) headers.Authorization = 'Bearer ' + token;
  const r = await fetch(base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await r.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = text;
  }
  return { status: r.status, data, size: text.length };
}
async function ok(base, path, opts) {
  const r = await call(base, path, opts);
  if (r.status >= 300) throw new Error(`${opts && opts.method ? opts.method : 'GET'} ${path}: ${r.status} ${JSON.stringify(r.data)}`);
  return r.data;
}
const api = (path, opts) => ok(A, path, opts);
// refreshStats recomputes the counters now. A scheduled stats run in progress (the brokers run
// the job every 10 s) makes the route answer "skipped": it is asked again until it ran, so the
// counters read next include everything written before this call.
async function refreshStats() {
  for (let i = 0; i < 240; i++) {
    const r = await api('/api/v1/stats/refresh', { method: 'POST', body: {} });
    if (!r || !r.skipped) return;
    await new Promise((res) => setTimeout(res, 250));
  }
  throw new Error('stats refresh skipped for a minute: another run kept the lock');
}

function jwt(claims) {
  const b64 = (o) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const head = b64({ alg: 'HS256', typ: 'JWT' });
  const body = b64(claims);
  const sig = createHmac('sha256', SECRET).update(head + '.' + body).digest('base64url');
  return `${head}.${body}.${sig}`;
}
const now = () => Math.floor(Date.now() / 1000);
const TOKENS = {
  'read-only': jwt({ sub: 'rosa', role: 'read-only', exp: now() + 3600 }),
  'read-write': jwt({ sub: 'ravi', role: 'read-write', exp: now() + 3600 }),
  admin: jwt({ sub: 'ada', role: 'admin', exp: now() + 3600 }),
};

// ---------- seed ----------

const S = {}; // what the tests need to know about the seeded data

async function pop(queue, group, batch = 1) {
  // 204 (nothing to deliver) has no body.
  return (await ok(A, `/api/v1/pop/queue/${encodeURIComponent(queue)}?consumerGroup=${encodeURIComponent(group)}&wait=false&batch=${batch}`)) || { messages: [] };
}
async function ack(msg, leaseId, group, status = 'completed', error) {
  return api('/api/v1/ack', { method: 'POST', body: { transactionId: msg.transactionId, partitionId: msg.partitionId, leaseId, status, error, consumerGroup: group } });
}

async function seed() {
  await api('/api/v1/configure', { method: 'POST', body: { queue: 'orders', namespace: 'shop', task: 'fulfil', options: { leaseTime: 120 } } });
  await api('/api/v1/configure', { method: 'POST', body: { queue: 'payments', namespace: 'shop', task: 'charge', options: { retryLimit: 0 } } });
  await api('/api/v1/configure', { method: 'POST', body: { queue: 'emails', namespace: 'notify', task: 'send' } });
  const items = [];
  for (let i = 0; i < 24; i++) items.push({ queue: 'orders', partition: 'p' + (i % 4), transactionId: 'order-' + i, payload: { orderId: i, items: [{ sku: 'A' + i, qty: (i % 3) + 1 }], note: 'seeded' } });
  for (let i = 0; i < 6; i++) items.push({ queue: 'payments', partition: i % 2 ? 'eu' : 'us', transactionId: 'pay-' + i, payload: { amount: 10 * (i + 1), currency: 'EUR' } });
  for (let i = 0; i < 4; i++) items.push({ queue: 'emails', transactionId: 'mail-' + i, payload: { to: `user${i}@example.test` } });
  const pushed = await api('/api/v1/push', { method: 'POST', body: { items } });
  S.pushed = pushed;
  // Groups on orders: "shipping" consumes some, "audit" a little, queue mode some.
  for (const [g, n] of [['shipping', 3], ['audit', 1], ['__QUEUE_MODE__', 2]]) {
    for (let i = 0; i < n; i++) {
      const r = await pop('orders', g, 2);
      for (const m of r.messages || []) await ack(m, r.leaseId, g);
    }
  }
  // Dead letters: "billing" fails every payment (retryLimit 0), "ledger" completes them.
  for (let i = 0; i < 6; i++) {
    const r = await pop('payments', 'billing', 1);
    for (const m of r.messages || []) await ack(m, r.leaseId, 'billing', 'failed', i % 3 === 0 ? 'card declined' : 'gateway timeout');
  }
  for (let i = 0; i < 6; i++) {
    const r = await pop('payments', 'ledger', 1);
    for (const m of r.messages || []) await ack(m, r.leaseId, 'ledger');
  }
  // Traces across queues under one name.
  const byTxn = Object.fromEntries(pushed.map((p, i) => [items[i].transactionId, p]));
  S.byTxn = byTxn;
  for (const [txn, ev, g] of [
    ['order-1', 'received', 'shipping'],
    ['order-1', 'packed', 'shipping'],
    ['pay-1', 'charged', 'billing'],
    ['mail-1', 'sent', '__QUEUE_MODE__'],
    ['order-2', 'received', 'shipping'],
  ]) {
    await api('/api/v1/traces', { method: 'POST', body: { transactionId: txn, partitionId: byTxn[txn].partition_id, eventType: ev, consumerGroup: g, data: { step: ev }, traceNames: ['checkout-flow'] } });
  }
  await refreshStats();
}

// ---------- browser harness ----------

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'],
});

const results = [];
let current = null;
let lastPage = null;

/** open gives a page that records console errors, CSP violations, failed and foreign requests. */
async function open(base, { theme = 'light', size = [1440, 900], token, storage = { 'qg.refresh': '0' }, tz } = {}) {
  const ctx = await browser.newContext({ viewport: { width: size[0], height: size[1] }, colorScheme: theme, reducedMotion: 'reduce', timezoneId: tz });
  if (token || storage) {
    await ctx.addInitScript(
      ([t, s]) => {
        if (t && !sessionStorage.getItem('qg.token')) sessionStorage.setItem('qg.token', t);
        if (s) for (const [k, v] of Object.entries(s)) localStorage.setItem(k, v);
      },
      [token, storage],
    );
  }
  const page = await ctx.newPage();
  const origin = new URL(base).origin;
  page.problems = [];
  page.requests = [];
  page.allow404 = new Set();
  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    const t = m.text();
    if (/Failed to load resource: the server responded with a status of (401|403|404)/.test(t)) return; // judged per response below
    page.problems.push('console: ' + t);
  });
  page.on('pageerror', (e) => page.problems.push('page error: ' + e.message));
  page.inflight = 0;
  page.on('requestfinished', () => page.inflight--);
  page.on('request', (r) => {
    page.inflight++;
    page.requests.push({ url: r.url(), headers: r.headers() });
    const u = r.url();
    if (!u.startsWith(origin) && !u.startsWith('data:')) page.problems.push('request to another origin: ' + u);
  });
  page.on('requestfailed', (r) => {
    page.inflight--;
    const f = r.failure() && r.failure().errorText;
    if (f && /ERR_ABORTED|cancelled/i.test(f)) return; // superseded or left-page requests, by design
    page.problems.push(`failed request: ${r.url()} ${f}`);
  });
  page.on('response', (r) => {
    const u = new URL(r.url());
    if (r.status() >= 400 && !page.allow404.has(u.pathname) && !(r.status() === 401 && page.allow401) && !(r.status() === 403 && page.allow403)) {
      page.problems.push(`HTTP ${r.status()}: ${u.pathname}${u.search}`);
    }
  });
  page.base = base;
  page.ctx = ctx;
  lastPage = page;
  return page;
}
async function close(page) {
  await page.ctx.close();
}
function clean(page, what) {
  const p = page.problems.splice(0);
  if (p.length) throw new Error(`${what}: ${p.join('; ')}`);
}
async function goto(page, hash) {
  await page.goto(page.base + '/' + hash);
  await page.locator('main h1').first().waitFor();
  await settle(page);
}
/**
 * until polls fn in the page (page.evaluate: the CSP forbids the eval that waitForFunction uses)
 * until it returns a truthy value, for at most ms.
 */
async function until(page, fn, arg, ms = 30000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await page.evaluate(fn, arg);
    if (v) return v;
    if (Date.now() > end) throw new Error('timed out waiting for ' + fn.toString());
    await new Promise((r) => setTimeout(r, 100));
  }
}
/**
 * settle waits until the page's requests have answered and what they answered is drawn: none in
 * flight (the load event's network idle says nothing about requests a hash change or a refresh
 * starts), no panel busy, none "updating". Bounded at 15 s each, and lenient: callers assert
 * what they need.
 */
async function settle(page) {
  await page.waitForLoadState('networkidle').catch(() => {});
  for (let i = 0; i < 300 && page.inflight > 0; i++) await new Promise((r) => setTimeout(r, 50));
  await until(
    page,
    () => !document.querySelector('[aria-busy="true"]') && ![...document.querySelectorAll('.age')].some((e) => e.textContent.includes('updating')),
    undefined,
    15000,
  ).catch(() => {});
}
async function axe(page, what) {
  // Through the DevTools protocol: the CSP refuses inline scripts, as it should.
  if (!(await page.evaluate(() => typeof window.axe === 'object'))) await page.evaluate(axeSource);
  const r = await page.evaluate(async () => {
    // eslint-disable-next-line no-undef
    const res = await axe.run(document, { resultTypes: ['violations'] });
    return res.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id} (${v.impact}): ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(' | ')}`);
  });
  if (r.length) throw new Error(`axe on ${what}: ${r.join('; ')}`);
}
function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}
async function text(page, sel) {
  return (await page.locator(sel).first().innerText()).trim();
}

async function test(name, fn) {
  if (ONLY && !ONLY.split('|').some((o) => name.includes(o))) return;
  const t0 = Date.now();
  current = name;
  try {
    await fn();
    results.push({ name, ok: true, ms: Date.now() - t0 });
    console.log(`ok    ${name} (${Date.now() - t0} ms)`);
  } catch (e) {
    results.push({ name, ok: false, ms: Date.now() - t0, err: e.message });
    const shot = `${OUT}/FAILED-${results.length}.png`;
    if (lastPage && !lastPage.isClosed()) {
      await lastPage.screenshot({ path: shot }).catch(() => {});
      const dlg = await lastPage.locator('dialog[open]').innerText().catch(() => '');
      if (dlg) e.message += '\nopen dialog: ' + dlg.replace(/\s+/g, ' ').slice(0, 300);
    }
    console.log(`FAIL  ${name} (${Date.now() - t0} ms)\n      ${e.message.split('\n').join('\n      ')}`);
  }
}
function skip(name, why) {
  results.push({ name, ok: true, skipped: why });
  console.log(`skip  ${name}: ${why}`);
}

// ---------- which optional routes the broker has (M1–M13; the spool issue's DLQ routes) ----------

async function has(method, path, body) {
  const r = await call(A, path, { method, body });
  return r.status !== 404 && r.status !== 405;
}

// ================= tests =================

const t0 = Date.now();
await seed();
const HAVE = {
  me: await has('GET', '/api/v1/auth/me'),
  jobs: await has('GET', '/api/v1/system/jobs'),
  requeue: (await call(A, '/api/v1/dlq/requeue', { method: 'POST', body: { ids: [] } })).status !== 404 && (await call(A, '/api/v1/dlq/requeue', { method: 'POST', body: { ids: [] } })).status !== 405,
};
console.log(`seeded in ${Date.now() - t0} ms; routes present: ${JSON.stringify(HAVE)}`);
const missing404 = [];
if (!HAVE.me) missing404.push('/api/v1/auth/me');
if (!HAVE.jobs) missing404.push('/api/v1/system/jobs');

const ordersP1 = S.byTxn['order-5'];
const PAGES = [
  ['overview', '#/'],
  ['queues', '#/queues'],
  ['queue', '#/queues/orders'],
  ['queue-groups', '#/queues/orders?tab=groups'],
  ['queue-lag', '#/queues/orders?tab=lag'],
  ['queue-messages', '#/queues/orders?tab=messages'],
  ['queue-charts', '#/queues/orders?tab=charts'],
  ['queue-settings', '#/queues/orders?tab=settings'],
  ['messages', '#/messages'],
  ['message', `#/messages/${ordersP1.partition_id}/order-5`],
  ['dlq', '#/dlq'],
  ['groups', '#/groups'],
  ['group', '#/groups/shipping'],
  ['traces', '#/traces'],
  ['trace', '#/traces/checkout-flow'],
  ['analytics', '#/analytics'],
  ['system', '#/system'],
  ['not-found', '#/no-such-view'],
];

await Promise.all(['light', 'dark'].map((theme) =>
  test(`every page, ${theme} theme: no console error, CSP violation, failed or foreign request; axe; screenshots`, async () => {
    for (const size of [
      [1440, 900],
      [390, 844],
    ]) {
      const page = await open(A, { theme, size });
      for (const p of missing404) page.allow404.add(p);
      for (const [name, hash] of PAGES) {
        await goto(page, hash);
        const got = await page.evaluate(() => document.documentElement.dataset.theme);
        assert(got === theme, `${name}: theme ${got}, want ${theme}`);
        clean(page, `${name} (${theme}, ${size[0]})`);
        if (size[0] === 1440) await axe(page, `${name} (${theme})`);
        await page.screenshot({ path: `${OUT}/${name}-${theme}-${size[0]}x${size[1]}.png`, fullPage: size[0] === 1440 });
      }
      await close(page);
    }
  }),
));

await test('README screenshots (small): overview in light, a lag heatmap in dark', async () => {
  for (const [name, hash, theme] of [
    ['dashboard-overview', '#/', 'light'],
    ['dashboard-heatmap', '#/queues/orders?tab=lag', 'dark'],
  ]) {
    const page = await open(A, { theme, size: [1100, 680] });
    for (const p of missing404) page.allow404.add(p);
    await goto(page, hash);
    await page.screenshot({ path: `${OUT}/${name}.png` });
    clean(page, name);
    await close(page);
  }
});

await test('charts: drag-zoom writes the window into the URL; "View as table" shows the values', async () => {
  const page = await open(A);
  for (const p of missing404) page.allow404.add(p);
  await goto(page, '#/analytics?window=1h');
  const chart = page.locator('#c-throughput svg.chart-svg');
  const box = await chart.boundingBox();
  // From 80 % of the hour to its end: the window must hold the traffic this run made, all of it
  // in the last minutes. Ending at 98 % (1.2 min ago), it was empty whenever the run reached this
  // test within about a minute of that traffic, and an empty window shows no table.
  await page.mouse.move(box.x + box.width * 0.8, box.y + box.height / 2);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width - 1, box.y + box.height / 2, { steps: 5 });
  await page.mouse.up();
  await until(page, () => location.hash.includes('from=') && location.hash.includes('to=') && !location.hash.includes('window='));
  const q = new URLSearchParams(page.url().split('?')[1]);
  const span = new Date(q.get('to')) - new Date(q.get('from'));
  assert(span > 5 * 60e3 && span < 20 * 60e3, 'zoomed window of ' + span + ' ms from 18 % of an hour');
  await settle(page);
  await page.locator('#c-throughput').getByRole('button', { name: 'View as table' }).click();
  await page.locator('#c-throughput table').waitFor();
  clean(page, 'charts');
  await close(page);
});

await test('numbers equal the API answers (overview tiles, queue list total, DLQ total, partitions)', async () => {
  await refreshStats();
  const page = await open(A);
  for (const p of missing404) page.allow404.add(p);
  await goto(page, '#/');
  const ov = await api('/api/v1/resources/overview');
  const tile = async (label) => (await page.locator('.tile', { hasText: label }).first().locator('.tile-value').innerText()).trim();
  assert((await tile('Queues')) === String(ov.queues), `Queues tile ${await tile('Queues')} != ${ov.queues}`);
  assert((await tile('Partitions')) === String(ov.partitions), `Partitions tile != ${ov.partitions}`);
  assert((await tile('Total messages')) === ov.messages.total.toLocaleString('en-US'), `Total tile != ${ov.messages.total}`);
  await goto(page, '#/dlq');
  const dlq = await api('/api/v1/dlq');
  assert((await text(page, '#dlq-list h2')) === `${dlq.total} matching entries`, `DLQ heading ${await text(page, '#dlq-list h2')} != ${dlq.total}`);
  await goto(page, '#/queues/orders');
  const st = await api('/api/v1/status/queues/orders');
  const rows = await page.locator('#partitions tbody tr').count();
  assert(rows === st.partitions.length, `partition rows ${rows} != ${st.partitions.length}`);
  clean(page, 'numbers');
  await close(page);
});

/** frames waits for two animation frames (a scroll event has been handled and the page drawn). */
const frames = (page) => page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));

await test('lists: a 1,000-row page is windowed (at most 200 rows in the DOM), scrolls to its last row; rowcount, rowindex and keyboard focus', async () => {
  const items = [];
  for (let i = 0; i < 1000; i++) items.push({ queue: 'bulk', partition: 'b' + (i % 5), transactionId: 'bulk-' + String(i).padStart(4, '0'), payload: { i } });
  await api('/api/v1/push', { method: 'POST', body: { items } });
  const page = await open(A);
  for (const p of missing404) page.allow404.add(p);
  await goto(page, '#/messages?queue=bulk');
  // The page size is a choice in the filters; the API's answer to the 1,000-row call is the truth.
  const answer = page.waitForResponse((r) => r.url().includes('/api/v1/messages?') && r.url().includes('limit=1000'));
  await page.getByLabel('Rows per page').selectOption('1000');
  const want = await (await answer).json();
  assert(want.messages.length === 1000, 'API page holds ' + want.messages.length + ' messages, want 1000');
  await page.locator('#msg-list table[aria-rowcount="1001"]').waitFor();
  assert(page.url().includes('limit=1000'), 'page size not in the URL: ' + page.url());
  const rows = () => page.evaluate(() => document.querySelectorAll('#msg-list tbody tr[data-ri]').length);
  const box = page.locator('#msg-list .vwrap');
  let most = await rows();
  for (let k = 1; k <= 10; k++) {
    await box.evaluate((b, f) => (b.scrollTop = b.scrollHeight * f), k / 10);
    await frames(page);
    most = Math.max(most, await rows());
  }
  const lastRow = page.locator('#msg-list tbody tr[aria-rowindex="1001"]');
  await lastRow.waitFor();
  most = Math.max(most, await rows());
  assert(most <= 200, `${most} data rows in the DOM at once (at most 200)`);
  const lastTxn = want.messages[999].transactionId;
  assert((await lastRow.innerText()).includes(lastTxn), `last row is not ${lastTxn}: ${await lastRow.innerText()}`);
  const rb = await lastRow.boundingBox();
  const bb = await box.boundingBox();
  assert(rb && rb.y >= bb.y && rb.y + rb.height <= bb.y + bb.height + 1, 'last row not visible in the scrolled box');
  // Every rendered row's index matches its message in the API's order.
  const mism = await page.evaluate((ids) => [...document.querySelectorAll('#msg-list tbody tr[data-ri]')].filter((tr) => !tr.innerText.includes(ids[+tr.getAttribute('aria-rowindex') - 2])).length, want.messages.map((m) => m.transactionId));
  assert(mism === 0, mism + ' rows whose aria-rowindex does not match the API order');
  await page.screenshot({ path: `${OUT}/list-1000-light-1440x900.png` });
  await axe(page, 'a windowed 1,000-row list');
  // Keyboard: Home, End and the arrows move the focus across the whole page, scrolling as needed.
  await lastRow.focus();
  await page.keyboard.press('Home');
  await until(page, () => document.activeElement.getAttribute('aria-rowindex') === '2');
  await page.keyboard.press('ArrowDown');
  await until(page, () => document.activeElement.getAttribute('aria-rowindex') === '3');
  await page.keyboard.press('End');
  await until(page, () => document.activeElement.getAttribute('aria-rowindex') === '1001');
  await page.keyboard.press('ArrowUp');
  await until(page, () => document.activeElement.getAttribute('aria-rowindex') === '1000');
  assert((await rows()) <= 200, 'more than 200 rows after keyboard moves');
  await page.keyboard.press('Enter');
  await page.locator('h1', { hasText: 'Message ' + want.messages[998].transactionId }).waitFor();
  clean(page, 'windowed list');
  await close(page);
});

await test('deep links: a reload and back/forward restore view, filters and tab', async () => {
  const page = await open(A);
  for (const p of missing404) page.allow404.add(p);
  await goto(page, '#/messages?queue=orders&status=pending&window=24h');
  await page.reload();
  await settle(page);
  assert((await page.getByLabel('Queue', { exact: true }).inputValue()) === 'orders', 'queue filter lost on reload');
  assert((await page.getByLabel('Status').inputValue()) === 'pending', 'status filter lost on reload');
  await goto(page, '#/queues/orders?tab=lag');
  await page.goBack();
  await settle(page);
  assert(page.url().includes('#/messages?'), 'back did not restore the messages view: ' + page.url());
  await page.goForward();
  await settle(page);
  assert((await page.locator('[role=tab][aria-selected=true]').innerText()).includes('Lag'), 'forward did not restore the lag tab');
  clean(page, 'deep links');
  await close(page);
});

await test('publish shows queued, then duplicate on a repeat; the API has the message', async () => {
  const page = await open(A);
  for (const p of missing404) page.allow404.add(p);
  await goto(page, '#/queues/emails');
  await page.getByRole('button', { name: 'Publish a test message' }).click();
  await page.getByLabel('Transaction ID (optional)').fill('e2e-pub-1');
  await page.getByRole('button', { name: 'Publish', exact: true }).click();
  await page.locator('.pub-status').first().waitFor();
  assert((await text(page, '.pub-status')) === 'queued', 'first publish: ' + (await text(page, '.pub-status')));
  await page.getByRole('button', { name: 'Publish', exact: true }).click();
  await until(page, () => document.querySelectorAll('.pub-status').length === 2);
  assert((await text(page, '.pub-status')) === 'duplicate', 'repeat publish: ' + (await text(page, '.pub-status')));
  const m = await api('/api/v1/messages?queue=emails&limit=50');
  assert(m.messages.some((x) => x.transactionId === 'e2e-pub-1'), 'published message not listed by the API');
  clean(page, 'publish');
  await close(page);
});

await test('delete a message: its detail answers 404 afterwards', async () => {
  const page = await open(A);
  for (const p of missing404) page.allow404.add(p);
  const m = S.byTxn['order-20'];
  await goto(page, `#/messages/${m.partition_id}/order-20`);
  await page.getByRole('button', { name: 'Delete message…' }).click();
  // The page reloads the message after the action and gets 404. Allowed before the click: the
  // click can return after that reload has answered (it did once on a slow machine). The DELETE
  // itself must succeed: .result shows only a 2xx answer.
  page.allow404.add(`/api/v1/messages/${m.partition_id}/order-20`);
  await page.locator('dialog').getByRole('button', { name: 'Delete message' }).click();
  await page.locator('dialog .result').waitFor();
  const r = await call(A, `/api/v1/messages/${m.partition_id}/order-20`);
  assert(r.status === 404, 'message still there: ' + r.status);
  await page.locator('dialog').getByRole('button', { name: 'Close', exact: true }).click();
  await page.locator('.alert', { hasText: 'not found' }).waitFor();
  await settle(page);
  clean(page, 'delete message');
  await close(page);
});

await test('settings: edit one option, review the change, save; configure stored it and kept the others', async () => {
  const before = await api('/api/v1/resources/queues/emails?limit=0');
  if (!before.options) throw new Error('GET /api/v1/resources/queues/:queue has no options (M9)');
  const page = await open(A);
  for (const p of missing404) page.allow404.add(p);
  await goto(page, '#/queues/emails?tab=settings');
  await page.getByLabel('retryLimit', { exact: true }).fill('7');
  await page.getByRole('button', { name: /^Review 1 change$/ }).click();
  const dlg = page.locator('dialog');
  assert((await dlg.innerText()).includes('retryLimit'), 'review does not name the change');
  await dlg.getByRole('button', { name: 'Save', exact: true }).click();
  await dlg.locator('pre.json').waitFor();
  const after = await api('/api/v1/resources/queues/emails?limit=0');
  assert(after.options.retryLimit === 7, 'retryLimit not saved: ' + after.options.retryLimit);
  for (const [k, v] of Object.entries(before.options)) if (k !== 'retryLimit') assert(JSON.stringify(after.options[k]) === JSON.stringify(v), `option ${k} changed: ${v} → ${after.options[k]}`);
  clean(page, 'settings');
  await close(page);
});

await test('seek a queue to its end: the lag shown and the API lag go to 0', async () => {
  const page = await open(A);
  for (const p of missing404) page.allow404.add(p);
  const before = await api('/api/v1/consumer-groups/audit?queue=orders');
  assert(before.orders.partitions.some((p) => p.offsetLag > 0), 'seed: audit should lag');
  await goto(page, '#/groups/audit');
  await page.getByRole('button', { name: 'Seek queue…' }).first().click();
  await page.locator('dialog').getByRole('button', { name: 'Seek', exact: true }).click();
  await page.locator('dialog .result').waitFor();
  const after = await api('/api/v1/consumer-groups/audit?queue=orders');
  assert(after.orders.partitions.every((p) => p.offsetLag === 0), 'API lag after seek: ' + JSON.stringify(after.orders.partitions));
  await page.locator('dialog').getByRole('button', { name: 'Close', exact: true }).click();
  await until(page, () => [...document.querySelectorAll('.offset-lag')].every((e) => e.textContent === '0'));
  clean(page, 'seek');
  await close(page);
});

await test('DLQ requeue (redeliver): the entry is gone, the failing group pops the message, the other group does not', async () => {
  if (!HAVE.requeue) throw new Error('POST /api/v1/dlq/requeue is missing (M2, the spool issue); the button is wired to it');
  const page = await open(A);
  for (const p of missing404) page.allow404.add(p);
  const list = await api('/api/v1/dlq?queue=payments&consumerGroup=billing');
  const e = list.messages[0];
  await goto(page, '#/dlq?queue=payments');
  const row = page.locator('#dlq-list tbody tr', { hasText: e.transactionId }).first();
  await row.locator('input[type=checkbox]').check();
  await page.getByRole('button', { name: 'Requeue selected…' }).click();
  await page.locator('dialog').getByRole('button', { name: 'Requeue', exact: true }).click();
  await page.locator('dialog .result').waitFor();
  const after = await api('/api/v1/dlq?queue=payments&consumerGroup=billing');
  assert(!after.messages.some((x) => x.dlqId === e.dlqId), 'entry still listed');
  const other = await pop('payments', 'ledger', 10);
  assert(!(other.messages || []).some((m) => m.transactionId === e.transactionId), 'the other group got the message again');
  const again = await pop('payments', 'billing', 10);
  assert((again.messages || []).some((m) => m.transactionId === e.transactionId), 'the failing group did not get the message');
  for (const m of again.messages || []) await ack(m, again.leaseId, 'billing');
  clean(page, 'requeue');
  await close(page);
});

await test('a snapshot held past XMIN_WARN_SECONDS shows on the System page with its holder', async () => {
  // Broker A runs with XMIN_WARN_SECONDS=3 (scripts/e2e.sh); psql holds a REPEATABLE READ
  // snapshot for 20 s, as a forgotten transaction would.
  const holder = spawn('psql', [DB_URL, '-qc', 'BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT pg_sleep(20); COMMIT'], { stdio: 'ignore' });
  try {
    await new Promise((r) => setTimeout(r, 4000));
    const page = await open(A);
    for (const p of missing404) page.allow404.add(p);
    await goto(page, '#/system');
    await page.locator('.banner.horizon-warning', { hasText: 'XMIN_WARN_SECONDS' }).waitFor();
    const fact = await page.locator('dd.horizon').textContent();
    assert(/\d s, pid \d+/.test(fact), 'the oldest snapshot fact does not name its holder: ' + fact);
    clean(page, 'horizon');
    await close(page);
  } finally {
    holder.kill();
  }
});

await test('maintenance toggle flips /health (pop maintenance on, then off)', async () => {
  const page = await open(A);
  for (const p of missing404) page.allow404.add(p);
  await goto(page, '#/system');
  await page.getByRole('button', { name: 'Turn pop maintenance on…' }).click();
  await page.locator('dialog').getByRole('button', { name: 'Turn on' }).click();
  await page.locator('dialog .result').waitFor();
  let h = await api('/health');
  for (let i = 0; i < 30 && !h.popMaintenanceMode; i++) await new Promise((r) => setTimeout(r, 500)), (h = await api('/health'));
  assert(h.popMaintenanceMode === true, '/health popMaintenanceMode did not turn on');
  await page.locator('dialog').getByRole('button', { name: 'Close', exact: true }).click();
  await page.locator('.banner', { hasText: 'Pop maintenance is on' }).waitFor();
  await page.getByRole('button', { name: 'Turn pop maintenance off…' }).click();
  await page.locator('dialog').getByRole('button', { name: 'Turn off' }).click();
  await page.locator('dialog .result').waitFor();
  h = await api('/health');
  for (let i = 0; i < 30 && h.popMaintenanceMode; i++) await new Promise((r) => setTimeout(r, 500)), (h = await api('/health'));
  assert(h.popMaintenanceMode === false, '/health popMaintenanceMode did not turn off');
  clean(page, 'maintenance');
  await close(page);
});

await test('delete a consumer group on one queue and a queue (name typed): the API agrees', async () => {
  const page = await open(A);
  for (const p of missing404) page.allow404.add(p);
  await api('/api/v1/push', { method: 'POST', body: { items: [{ queue: 'scratch', payload: { x: 1 } }] } });
  await pop('scratch', 'tmp-group');
  await goto(page, '#/groups/tmp-group');
  page.allow404.add('/api/v1/consumer-groups/tmp-group'); // the page reloads it after the action
  page.allow404.add('/api/v1/resources/queues/scratch');
  page.allow404.add('/api/v1/status/queues/scratch');
  await page.getByRole('button', { name: 'Delete on this queue…' }).click();
  await page.locator('dialog').getByRole('button', { name: 'Delete group' }).click();
  await page.locator('dialog .result').waitFor();
  const g = await call(A, '/api/v1/consumer-groups/tmp-group');
  assert(g.status === 404, 'group still has cursors: ' + g.status);
  await page.locator('dialog').getByRole('button', { name: 'Close', exact: true }).click();
  await goto(page, '#/queues/scratch');
  await page.getByRole('button', { name: 'Delete queue…' }).click();
  const confirm = page.locator('dialog').getByRole('button', { name: 'Delete queue' });
  assert(await confirm.isDisabled(), 'delete enabled before the name is typed');
  await page.locator('dialog').getByLabel('Type scratch to confirm').fill('scratch');
  await confirm.click();
  await page.locator('dialog .result').waitFor();
  assert((await text(page, 'dialog .result')).includes('"existed": true'), 'answer not shown');
  const q = await call(A, '/api/v1/resources/queues/scratch');
  assert(q.status === 404, 'queue still there');
  clean(page, 'delete group and queue');
  await close(page);
});

await test('message actions: "Move to DLQ" writes entries with the reason; "Retry" requeues a dead letter and only the failing group pops it', async () => {
  const [p] = await api('/api/v1/push', { method: 'POST', body: { items: [{ queue: 'orders', partition: 'p-move', transactionId: 'e2e-move-1', payload: { x: 1 } }] } });
  const page = await open(A);
  for (const x of missing404) page.allow404.add(x);
  await goto(page, `#/messages/${p.partition_id}/e2e-move-1`);
  await page.getByRole('button', { name: 'Move to DLQ…' }).click();
  const dlg = page.locator('dialog');
  await dlg.getByLabel('Reason recorded (optional)').fill('e2e: bad payload');
  await dlg.getByRole('button', { name: 'Move to DLQ', exact: true }).click();
  await dlg.locator('.result').waitFor();
  const answer = JSON.parse(await dlg.locator('pre.json').innerText());
  const entries = (await api('/api/v1/dlq?queue=orders&limit=1000')).messages.filter((e) => e.transactionId === 'e2e-move-1');
  const moved = answer.consumerGroups.filter((g) => g.action === 'moved').map((g) => g.consumerGroup).sort();
  assert(answer.success && moved.length > 0, 'nothing moved: ' + JSON.stringify(answer));
  assert(JSON.stringify(entries.map((e) => e.consumerGroup).sort()) === JSON.stringify(moved), `DLQ entries ${JSON.stringify(entries.map((e) => e.consumerGroup))} != moved groups ${JSON.stringify(moved)}`);
  assert(entries.every((e) => e.errorMessage === 'e2e: bad payload'), 'reason not recorded: ' + JSON.stringify(entries.map((e) => e.errorMessage)));
  await dlg.getByRole('button', { name: 'Close', exact: true }).click();
  const status = (await api(`/api/v1/messages/${p.partition_id}/e2e-move-1`)).status;
  await until(page, (s) => document.querySelector('.msg-status').textContent === s, status);
  // Retry one of billing's dead letters, for billing only.
  const pay = S.byTxn['pay-0'];
  const before = await api('/api/v1/dlq?queue=payments&consumerGroup=billing&limit=1000');
  assert(before.messages.some((e) => e.transactionId === 'pay-0'), 'seed: pay-0 should be a dead letter of billing');
  await goto(page, `#/messages/${pay.partition_id}/pay-0`);
  await page.getByRole('button', { name: 'Retry…' }).click();
  await dlg.getByLabel('Consumer group').selectOption('billing');
  await dlg.getByRole('button', { name: 'Retry', exact: true }).click();
  await dlg.locator('.result').waitFor();
  const r = JSON.parse(await dlg.locator('pre.json').innerText());
  assert(r.success && r.consumerGroups.some((g) => g.consumerGroup === 'billing' && g.action === 'requeued'), 'retry answer: ' + JSON.stringify(r));
  const after = await api('/api/v1/dlq?queue=payments&consumerGroup=billing&limit=1000');
  assert(!after.messages.some((e) => e.transactionId === 'pay-0'), 'the DLQ entry is still listed');
  const other = await pop('payments', 'ledger', 10);
  assert(!(other.messages || []).some((m) => m.transactionId === 'pay-0'), 'ledger got pay-0 again');
  const again = await pop('payments', 'billing', 10);
  assert((again.messages || []).some((m) => m.transactionId === 'pay-0'), 'billing did not get pay-0 back');
  for (const m of again.messages || []) await ack(m, again.leaseId, 'billing');
  await dlg.getByRole('button', { name: 'Close', exact: true }).click();
  clean(page, 'message actions');
  await close(page);
});

await test('times: the header switch shows every timestamp in local time or UTC, and is remembered', async () => {
  // Asia/Kolkata (UTC+05:30, no daylight saving) makes local and UTC differ visibly.
  const page = await open(A, { tz: 'Asia/Kolkata' });
  for (const x of missing404) page.allow404.add(x);
  const m = S.byTxn['order-6'];
  const detail = await api(`/api/v1/messages/${m.partition_id}/order-6`);
  const q = (await api('/api/v1/status/queues?search=orders')).queues.find((x) => x.name === 'orders');
  const inUTC = (iso, short) => new Date(iso).toISOString().replace('T', ' ').slice(0, short ? 19 : 23) + 'Z';
  const inKolkata = (iso, short) => new Date(Date.parse(iso) + 5.5 * 3600e3).toISOString().replace('T', ' ').slice(0, short ? 19 : 23);
  const created = () => page.evaluate(() => [...document.querySelectorAll('dl.facts dt')].find((d) => d.textContent === 'Created').nextElementSibling.textContent);
  const queueCreated = () => page.evaluate(() => [...document.querySelectorAll('#queue-list tbody tr')].find((r) => r.cells[0].textContent === 'orders').lastElementChild.textContent);
  await goto(page, `#/messages/${m.partition_id}/order-6`);
  assert((await created()) === inKolkata(detail.createdAt), `local: ${await created()} != ${inKolkata(detail.createdAt)}`);
  await page.getByLabel('Times').selectOption('utc');
  await until(page, (w) => [...document.querySelectorAll('dl.facts dt')].find((d) => d.textContent === 'Created').nextElementSibling.textContent === w, inUTC(detail.createdAt));
  await goto(page, '#/queues?q=orders');
  assert((await queueCreated()) === inUTC(q.createdAt, true), `queue list in UTC: ${await queueCreated()} != ${inUTC(q.createdAt, true)}`);
  await goto(page, '#/analytics');
  assert((await page.getByLabel('Times in UTC').count()) === 0, 'the Analytics page still has its own switch');
  await page.reload();
  await settle(page);
  assert((await page.getByLabel('Times').inputValue()) === 'utc', 'the choice was not remembered');
  assert((await page.evaluate(() => localStorage.getItem('qg.utc'))) === '1', 'not kept in localStorage');
  await goto(page, '#/queues?q=orders');
  await page.getByLabel('Times').selectOption('local');
  await until(page, (w) => [...document.querySelectorAll('#queue-list tbody tr')].find((r) => r.cells[0].textContent === 'orders').lastElementChild.textContent === w, inKolkata(q.createdAt, true));
  clean(page, 'times');
  await close(page);
});

// ---------- auth matrix ----------

const CONTROLS = [
  // [page, control name, level needed, what every role sees once the page's data is in]
  ['#/queues/orders', 'Publish a test message', 'read-write', 'text=Messages of this queue'],
  ['#/queues/orders', 'Delete queue…', 'admin', 'text=Messages of this queue'],
  [`#/messages/${S.byTxn['order-6'].partition_id}/order-6`, 'Delete message…', 'read-write', 'text=Copy as curl'],
  [`#/messages/${S.byTxn['order-6'].partition_id}/order-6`, 'Retry…', 'read-write', 'text=Copy as curl'],
  [`#/messages/${S.byTxn['order-6'].partition_id}/order-6`, 'Move to DLQ…', 'read-write', 'text=Copy as curl'],
  ['#/groups/shipping', 'Seek queue…', 'read-write', 'h2:has-text("Queue orders")'],
  ['#/groups/shipping', 'Delete group everywhere…', 'admin', 'h2:has-text("Queue orders")'],
  ['#/system', 'Recompute counters…', 'admin', '#health dl'],
];
const RANK = { 'read-only': 1, 'read-write': 2, admin: 3 };

for (const role of ['read-only', 'read-write', 'admin']) {
  await test(`auth matrix, ${role}: token dialog, chip, exactly the controls of the role, token only in the Authorization header`, async () => {
    const page = await open(B);
    page.allow401 = true; // the first call without a token
    for (const p of missing404) page.allow404.add(p);
    await page.goto(B + '/#/queues/orders');
    const dlg = page.locator('dialog', { hasText: 'Sign in with a token' });
    await dlg.waitFor();
    await dlg.getByLabel('Token (JWT)').fill(TOKENS[role]);
    await dlg.getByRole('button', { name: 'Use token' }).click();
    await dlg.waitFor({ state: 'detached' });
    await settle(page);
    if (HAVE.me) {
      const chip = await until(page, (r) => {
        const t = document.querySelector('.auth-chip').textContent;
        return t.includes(r) && t;
      }, role).catch(async () => text(page, '.auth-chip'));
      assert(chip.includes(role), `chip "${chip}" does not name ${role}`);
      for (const [hash, name, need, ready] of CONTROLS) {
        await goto(page, hash);
        await page.locator(ready).first().waitFor();
        const n = await page.getByRole('button', { name, exact: true }).count();
        const want = RANK[role] >= RANK[need];
        assert(want ? n > 0 : n === 0, `${role} on ${hash}: "${name}" ${n ? 'shown' : 'absent'}`);
      }
    }
    const tok = TOKENS[role];
    for (const r of page.requests) {
      assert(!r.url.includes(tok) && !r.url.includes(tok.split('.')[2]), 'token in a URL: ' + r.url);
      for (const [k, v] of Object.entries(r.headers)) if (k !== 'authorization' && v.includes(tok.split('.')[2])) throw new Error('token in header ' + k);
    }
    const store = await page.evaluate(() => ({ s: sessionStorage.getItem('qg.token'), l: localStorage.getItem('qg.token'), c: document.cookie }));
    assert(store.s === tok && !store.l && !store.c.includes(tok.split('.')[2]), 'token kept elsewhere than sessionStorage: ' + JSON.stringify({ l: !!store.l, c: store.c }));
    page.problems.length = 0; // the 401 before sign-in
    clean(page, 'auth ' + role);
    await close(page);
  });
}

await test('auth: a forced call answers 403 and the dialog shows "Insufficient permissions"', async () => {
  const page = await open(B, { token: TOKENS['read-write'] });
  for (const p of missing404) page.allow404.add(p);
  page.allow403 = true;
  // Pretend the broker said admin, so the control shows; the broker still refuses the call.
  await page.route('**/api/v1/auth/me', (r) =>
    r.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify({ authEnabled: true, authenticated: true, sub: 'ravi', roles: ['read-write'], level: 'admin', expiresAt: null }) }),
  );
  await goto(page, '#/queues/orders');
  await page.getByRole('button', { name: 'Delete queue…' }).click();
  await page.locator('dialog').getByLabel('Type orders to confirm').fill('orders');
  await page.locator('dialog').getByRole('button', { name: 'Delete queue' }).click();
  await page.locator('dialog .alert').waitFor();
  const t = await text(page, 'dialog .alert');
  assert(t.startsWith('Insufficient permissions'), 'dialog says: ' + t);
  const q = await call(B, '/api/v1/resources/queues/orders', { token: TOKENS.admin });
  assert(q.status === 200, 'queue was deleted');
  clean(page, 'forced 403');
  await close(page);
});

await test('auth: an expired token reopens the dialog and keeps the view', async () => {
  const expired = jwt({ sub: 'old', role: 'admin', exp: now() - 3600 });
  const page = await open(B, { token: expired });
  page.allow401 = true;
  for (const p of missing404) page.allow404.add(p);
  await page.goto(B + '/#/queues?q=ord');
  const dlg = page.locator('dialog', { hasText: 'Sign in with a token' });
  await dlg.waitFor();
  assert((await dlg.innerText()).includes('Token has expired'), 'dialog does not say the token expired: ' + (await dlg.innerText()));
  await dlg.getByLabel('Token (JWT)').fill(TOKENS['read-only']);
  await dlg.getByRole('button', { name: 'Use token' }).click();
  await dlg.waitFor({ state: 'detached' });
  await settle(page);
  assert(page.url().endsWith('#/queues?q=ord'), 'view lost: ' + page.url());
  await page.locator('#queue-list tbody tr', { hasText: 'orders' }).first().waitFor();
  page.problems.length = 0;
  await close(page);
});

await test('auth: "Remember on this browser" keeps the token in localStorage; "Forget token" removes it', async () => {
  const page = await open(B);
  page.allow401 = true;
  for (const p of missing404) page.allow404.add(p);
  await page.goto(B + '/#/');
  const dlg = page.locator('dialog', { hasText: 'Sign in with a token' });
  await dlg.waitFor();
  await dlg.getByLabel('Token (JWT)').fill(TOKENS.admin);
  await dlg.getByLabel('Remember on this browser').check();
  await dlg.getByRole('button', { name: 'Use token' }).click();
  await dlg.waitFor({ state: 'detached' });
  let s = await page.evaluate(() => [sessionStorage.getItem('qg.token'), localStorage.getItem('qg.token')]);
  assert(!s[0] && s[1] === TOKENS.admin, 'remembered token not in localStorage only');
  await page.locator('.auth-chip').click();
  await page.locator('dialog').getByRole('button', { name: 'Forget token' }).click();
  s = await page.evaluate(() => [sessionStorage.getItem('qg.token'), localStorage.getItem('qg.token')]);
  assert(!s[0] && !s[1], 'token not forgotten');
  page.problems.length = 0;
  await close(page);
});

await test('auth: a banner asks for a new token 60 s before it expires; at expiry the dialog reopens and keeps the view', async () => {
  const soon = jwt({ sub: 'sam', role: 'read-only', exp: now() + 20 });
  const me = await ok(B, '/api/v1/auth/me', { token: soon });
  assert(me.expiresAt, 'M1 does not report expiresAt: ' + JSON.stringify(me));
  const page = await open(B, { token: soon });
  page.allow401 = true; // calls made after exp
  for (const x of missing404) page.allow404.add(x);
  // The page's clock is Playwright's: the 20 s to expiry pass at once (fastForward below) instead
  // of in real time; the app's timers (the warning, the expiry, the refresh) run off this clock.
  await page.clock.install();
  await page.goto(B + '/#/queues?q=ord');
  const banner = page.locator('.banner.token-expiry');
  await banner.waitFor();
  assert((await banner.innerText()).includes('Your token expires at'), 'banner: ' + (await banner.innerText()));
  await page.locator('#queue-list tbody tr', { hasText: 'orders' }).first().waitFor();
  const dlg = page.locator('dialog', { hasText: 'Sign in with a token' });
  assert(!(await dlg.isVisible()), 'the token dialog opened before the token expired');
  await page.clock.fastForward(21000);
  await dlg.waitFor();
  assert((await dlg.innerText()).includes('Token has expired'), 'dialog does not say the token expired: ' + (await dlg.innerText()));
  await dlg.getByLabel('Token (JWT)').fill(TOKENS['read-only']);
  await dlg.getByRole('button', { name: 'Use token' }).click();
  await dlg.waitFor({ state: 'detached' });
  await until(page, () => !document.querySelector('.banner.token-expiry'));
  assert(page.url().endsWith('#/queues?q=ord'), 'view lost: ' + page.url());
  assert((await page.evaluate(() => sessionStorage.getItem('qg.token'))) === TOKENS['read-only'], 'new token not kept');
  page.problems.length = 0;
  await close(page);
});

// ---------- keyboard only ----------

async function tabTo(page, pred, max = 80) {
  for (let i = 0; i < max; i++) {
    await page.keyboard.press('Tab');
    if (await page.evaluate(pred)) return;
  }
  throw new Error('focus never reached: ' + pred.toString());
}

await test('keyboard only: open a queue (palette), open a message (Enter on a row), seek, requeue; skip link; ? and Esc', async () => {
  const page = await open(A);
  for (const p of missing404) page.allow404.add(p);
  await goto(page, '#/');
  await page.keyboard.press('Tab');
  assert((await page.evaluate(() => document.activeElement.textContent)) === 'Skip to content', 'first Tab is not the skip link');
  await page.keyboard.press('Enter');
  assert(await page.evaluate(() => document.activeElement.id === 'main'), 'skip link did not move focus to main');
  await page.keyboard.press('?');
  await page.locator('dialog', { hasText: 'Keyboard shortcuts' }).waitFor();
  await page.keyboard.press('Escape');
  await page.locator('dialog').waitFor({ state: 'detached' });
  // open a queue through the palette
  await page.keyboard.press('/');
  await until(page, () => document.activeElement.type === 'search' && !!document.activeElement.closest('dialog'));
  await page.keyboard.type('payments');
  await page.locator('.palette a', { hasText: 'Queue: payments' }).waitFor();
  await page.keyboard.press('Tab');
  await page.keyboard.press('Tab');
  await tabTo(page, () => document.activeElement.textContent === 'Queue: payments', 10);
  await page.keyboard.press('Enter');
  await page.locator('h1', { hasText: 'Queue payments' }).waitFor();
  // open a message with Enter on its row
  await goto(page, '#/messages?queue=orders');
  await tabTo(page, () => document.activeElement.tagName === 'TR');
  await page.keyboard.press('Enter');
  await page.locator('h1', { hasText: 'Message ' }).waitFor();
  // seek by keyboard
  await goto(page, '#/groups/shipping');
  await tabTo(page, () => document.activeElement.textContent === 'Seek queue…');
  await page.keyboard.press('Enter');
  await page.locator('dialog').waitFor();
  await tabTo(page, () => document.activeElement.textContent === 'Seek' && document.activeElement.type === 'submit', 20);
  await page.keyboard.press('Enter');
  await page.locator('dialog .result').waitFor();
  await page.keyboard.press('Escape');
  await page.locator('dialog').waitFor({ state: 'detached' });
  assert(await page.evaluate(() => document.activeElement.textContent === 'Seek queue…'), 'focus did not return to the opener');
  // requeue by keyboard
  if (HAVE.requeue) {
    await goto(page, '#/dlq?queue=payments');
    await tabTo(page, () => document.activeElement.getAttribute('aria-label') === 'Select row 1');
    await page.keyboard.press('Space');
    await tabTo(page, () => document.activeElement.textContent === 'Requeue selected…');
    await page.keyboard.press('Enter');
    await tabTo(page, () => document.activeElement.textContent === 'Requeue' && document.activeElement.type === 'submit', 20);
    await page.keyboard.press('Enter');
    await page.locator('dialog .result').waitFor();
    await page.keyboard.press('Escape');
  }
  // heatmap arrows
  await goto(page, '#/queues/orders?tab=lag');
  // Focus a cell whose column has another cell below it (pairs without a cursor have none).
  await page.evaluate(() => {
    const cells = [...document.querySelectorAll('.heat [data-r]')];
    const c = cells.find((x) => cells.some((y) => y.dataset.c === x.dataset.c && +y.dataset.r > +x.dataset.r));
    c.focus();
  });
  const a = await page.evaluate(() => document.activeElement.dataset.r + ',' + document.activeElement.dataset.c);
  await page.keyboard.press('ArrowDown');
  const b = await page.evaluate(() => document.activeElement.dataset.r + ',' + document.activeElement.dataset.c);
  const [ar, ac] = a.split(',').map(Number);
  const [br, bc] = b.split(',').map(Number);
  assert(br > ar && bc === ac, `arrows in the heatmap: ${a} → ${b}`);
  await page.keyboard.press('Enter');
  await page.locator('dialog', { hasText: 'Open in the group view' }).waitFor();
  await page.keyboard.press('Escape');
  clean(page, 'keyboard');
  await close(page);
});

// ---------- states ----------

await test('states: unknown queue shows the 404 panel; empty filter says "Nothing matches"; 400 text shown', async () => {
  const page = await open(A);
  for (const p of missing404) page.allow404.add(p);
  page.allow404.add('/api/v1/resources/queues/no-such-queue');
  await goto(page, '#/queues/no-such-queue');
  await page.locator('.alert', { hasText: 'Queue no-such-queue not found (deleted?)' }).waitFor();
  await goto(page, '#/dlq?queue=no-such-queue');
  await page.locator('#dlq-list', { hasText: 'Nothing matches' }).waitFor();
  page.problems.length = 0;
  page.on('response', () => {});
  await page.goto(A + '/#/messages?from=yesterday-ish');
  await page.locator('.alert', { hasText: 'Invalid from timestamp' }).waitFor();
  page.problems.length = 0;
  await close(page);
});

// ---------- scale ----------

// apiTimeline runs in the page: the API requests a page's navigation made, each as path, start,
// first byte and end in ms after the navigation (first byte minus start is the broker's time),
// so a slow first load says whether it waited for the broker or for the browser.
function apiTimeline(hash) {
  const t0 = (window.__qgNavStart && window.__qgNavStart[hash]) || 0;
  const ms = (v) => Math.round(v - t0);
  return performance
    .getEntriesByType('resource')
    .filter((e) => e.startTime >= t0 && /\/api\//.test(e.name))
    .map((e) => `${new URL(e.name).pathname} ${ms(e.startTime)}/${ms(e.responseStart)}/${ms(e.responseEnd)}`)
    .join(', ');
}

// firstLoadTimeline runs in the page: when the document and the app's script arrived, when the
// first API request left, when the overview's answer arrived, and when the tiles were in the DOM.
function firstLoadTimeline() {
  const ms = (v) => Math.round(v);
  const nav = performance.getEntriesByType('navigation')[0];
  const res = performance.getEntriesByType('resource');
  const app = res.find((e) => /\/assets\/app-/.test(e.name));
  const apis = res.filter((e) => /\/api\/|\/health/.test(e.name));
  const ov = res.find((e) => e.name.includes('/api/v1/resources/overview'));
  const first = apis.length ? Math.min(...apis.map((e) => e.startTime)) : NaN;
  return (
    `document ${ms(nav.responseEnd)}, app script ${app ? ms(app.responseEnd) : '?'}, ` +
    `first API request ${ms(first)}, overview answer ${ov ? ms(ov.startTime) + '-' + ms(ov.responseEnd) : '?'}, ` +
    `tiles in the DOM at ${window.__qgFirstData['#/']}`
  );
}

await test('scale: 10,000 queues and one queue of 10,000 partitions × 3 groups; first data within the bound, answers under 1 MB', async () => {
  const t1 = Date.now();
  for (let b = 0; b < 10; b++) {
    const items = [];
    for (let i = 0; i < 1000; i++) items.push({ queue: `scale-q-${String(b * 1000 + i).padStart(5, '0')}`, payload: { i } });
    await api('/api/v1/push', { method: 'POST', body: { items } });
  }
  for (let b = 0; b < 10; b++) {
    const items = [];
    for (let i = 0; i < 1000; i++) items.push({ queue: 'wide', partition: `part-${String(b * 1000 + i).padStart(5, '0')}`, payload: { i } });
    await api('/api/v1/push', { method: 'POST', body: { items } });
  }
  // A named group registers on the queue with its first pop and gets a cursor on every partition.
  for (const g of ['wide-a', 'wide-b', 'wide-c']) await pop('wide', g, 1);
  await refreshStats();
  console.log(`      seeded scale data in ${Date.now() - t1} ms`);
  // Each page and what its first data is: a selector, and a text the match must contain when an
  // earlier page's rows would match the selector too.
  const pages = [
    ['overview', '#/', '.tile-value'],
    ['queues', '#/queues', '#queue-list tbody tr'],
    ['queues search', '#/queues?q=scale-q-0999', '#queue-list tbody tr', 'scale-q-0999'],
    ['wide queue', '#/queues/wide', '#partitions tbody tr'],
    ['wide heatmap', '#/queues/wide?tab=lag', '.heat tbody tr'],
    ['groups', '#/groups', '#group-list tbody tr'],
    ['messages', '#/messages', '#msg-list tbody tr'],
  ];
  const page = await open(A);
  // Time to first data is taken in the page: from the navigation's start (the document's for the
  // first page, the hashchange for the others, which the app's router also acts on) to the DOM
  // mutation that brings the page's data. Playwright's own wait adds its round trips to the
  // browser, which on two busy cores are a large part of a second; its figure is printed too.
  await page.addInitScript((list) => {
    const first = (window.__qgFirstData = {});
    let want = null;
    const check = () => {
      if (!want || want.hash in first) return;
      for (const el of document.querySelectorAll(want.sel)) {
        if (!want.text || el.textContent.includes(want.text)) {
          first[want.hash] = Math.round(performance.now() - want.start);
          return;
        }
      }
    };
    const arm = (start) => {
      const p = list.find((x) => x[1] === location.hash);
      want = p ? { hash: p[1], sel: p[2], text: p[3], start } : null;
      check();
    };
    arm(0);
    window.__qgNavStart = {};
    window.addEventListener('hashchange', () => {
      window.__qgNavStart[location.hash] = performance.now();
      arm(performance.now());
    });
    new MutationObserver(check).observe(document, { subtree: true, childList: true, characterData: true });
  }, pages);
  for (const p of missing404) page.allow404.add(p);
  const big = [];
  page.on('response', async (r) => {
    try {
      const b = await r.body();
      if (b.length > 1024 * 1024) big.push(`${r.url()} ${b.length}`);
    } catch {
      /* redirects and aborted */
    }
  });
  const times = {};
  const seen = {};
  let timeline = '';
  const requests = {};
  for (const [name, hash, sel, text] of pages) {
    const s = Date.now();
    await page.goto(A + '/' + hash);
    await page.locator(sel, text ? { hasText: text } : {}).first().waitFor({ timeout: 90000 });
    seen[name] = Date.now() - s;
    times[name] = await page.evaluate((h) => window.__qgFirstData[h], hash);
    assert(typeof times[name] === 'number', `${name}: the page's own first-data time is missing`);
    // The first page pays for the document and the bundle: its browser-side timeline says
    // where a slow first load went (loading, starting the app, or waiting for the broker).
    if (name === 'overview') timeline = await page.evaluate(firstLoadTimeline);
    if (times[name] > FIRST_DATA_MS) requests[name] = await page.evaluate(apiTimeline, hash);
    const rows = await page.locator('tbody tr').count();
    assert(rows <= 400, `${name}: ${rows} rows in the DOM`);
  }
  console.log('      first data (ms, in the page): ' + JSON.stringify(times));
  console.log('      as Playwright saw it (ms, with its round trips): ' + JSON.stringify(seen));
  console.log('      overview, first load (browser clock, ms): ' + timeline);
  assert(!big.length, 'answers over 1 MB: ' + big.join(', '));
  const slow = Object.entries(times).filter(([, ms]) => ms > FIRST_DATA_MS);
  // §4.5's 1 s holds on a quiet machine; tests make no timed assertions by default (a shared CI
  // machine's load decides timing), so a miss is a warning and fails only with
  // E2E_STRICT_TIMING=1. Sizes and DOM rows always fail.
  if (slow.length) {
    const msg =
      `first data later than ${FIRST_DATA_MS} ms (docs/api/dashboard.md §4.5) on: ` +
      slow.map(([name, ms]) => `${name} ${ms} ms`).join(', ') +
      ' (E2E_STRICT_TIMING=1 fails on this)';
    for (const [name, list] of Object.entries(requests)) console.log(`      ${name}: API requests (start/first byte/end, ms): ${list}`);
    if (process.env.E2E_STRICT_TIMING === '1') throw new Error(msg);
    console.log('      WARNING ' + msg);
  }
  clean(page, 'scale');
  await close(page);
});

// ---------- a web page of another origin (docs/api/operations.md §1.3, "Web pages") ----------

// A page served from a second origin (a plain HTTP server of this file) tries to delete a queue
// and to push, as any site the user visits could: against broker A (auth off, no
// CORS_ALLOWED_ORIGINS) both are refused and nothing changes, the push being a "simple" text/plain
// request that a browser sends without a preflight; against broker D, which lists the page's
// origin, both succeed.
await test('a page of another origin cannot change an open broker; once its origin is listed it can', async () => {
  const { createServer } = await import('node:http');
  const foreign = createServer((req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
    res.end('<!doctype html><title>another site</title><p>another site</p>');
  });
  await new Promise((res) => foreign.listen(FOREIGN_PORT, '127.0.0.1', res));
  try {
    const origin = `http://127.0.0.1:${FOREIGN_PORT}`;
    const q = 'cors-victim-' + randomUUID().slice(0, 8);
    await api('/api/v1/push', { method: 'POST', body: { items: [{ queue: q, partition: 'p', payload: { n: 1 } }] } });
    const ctx = await browser.newContext();
    const page = await ctx.newPage();
    await page.goto(origin + '/');
    const attempt = (base) => page.evaluate(async ({ base, q }) => {
      const out = {};
      try {
        const r = await fetch(base + '/api/v1/resources/queues/' + q, { method: 'DELETE' });
        out.del = r.status;
      } catch (e) {
        out.del = 'refused: ' + e.message;
      }
      // no-cors: the browser sends it without asking and hides the answer; only the broker can refuse it.
      await fetch(base + '/api/v1/push', { method: 'POST', mode: 'no-cors', headers: { 'Content-Type': 'text/plain' },
        body: JSON.stringify({ items: [{ queue: q, partition: 'p', payload: { from: 'page' } }] }) }).catch(() => {});
      try {
        const r = await fetch(base + '/api/v1/push', { method: 'POST', headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({ items: [{ queue: q, partition: 'p', payload: { from: 'page-json' } }] }) });
        out.push = r.status;
      } catch (e) {
        out.push = 'refused: ' + e.message;
      }
      return out;
    }, { base, q });
    const messages = async () => {
      const r = await call(A, `/api/v1/pop/queue/${q}?batch=10&wait=false&subscriptionMode=all&consumerGroup=e2e-cors-${randomUUID().slice(0, 6)}`);
      return r.status === 204 ? [] : (r.data.messages || []).map((m) => JSON.stringify(m.data));
    };

    const refused = await attempt(A);
    assert(String(refused.del).startsWith('refused') && String(refused.push).startsWith('refused'),
      'broker A served the foreign page: ' + JSON.stringify(refused));
    const still = await call(A, '/api/v1/resources/queues/' + q);
    assert(still.status === 200, `queue after the foreign DELETE: ${still.status}`);
    const held = await messages();
    assert(held.length === 1 && held[0].includes('"n":1'), 'the foreign page pushed: ' + JSON.stringify(held));

    const allowed = await attempt(D);
    assert(allowed.del === 200 && (allowed.push === 201 || allowed.push === 200),
      'broker D refused the listed origin: ' + JSON.stringify(allowed));
    // The queue was deleted (its first message is gone) and the page's pushes made it anew.
    const after = await messages();
    assert(after.some((m) => m.includes('page-json')) && !after.some((m) => m.includes('"n":1')),
      'after the listed page: ' + JSON.stringify(after));
    await ctx.close();
    await call(A, '/api/v1/resources/queues/' + q, { method: 'DELETE' });
  } finally {
    foreign.close();
  }
});

// ---------- tenants ----------

await test('tenants: each tenant signs in, sees its tenant in the header and only its own queues', async () => {
  // Broker B (authentication on): tokens minted with its secret carry the tenant claim
  // (docs/api/concepts.md §14). Both tenants have a queue "tenant-shared"; each has one of its own.
  const tenants = ['team-red', 'team-blue'];
  const tok = Object.fromEntries(tenants.map((t) => [t, jwt({ sub: t + '-user', role: 'admin', tenant: t, exp: now() + 3600 })]));
  for (const t of tenants) {
    await ok(B, '/api/v1/push', { method: 'POST', token: tok[t], body: { items: [{ queue: 'tenant-shared', transactionId: t + '-shared', payload: { owner: t } }, { queue: 'tenant-' + t, payload: { owner: t } }] } });
  }
  try {
    for (const t of tenants) {
      const other = tenants.find((o) => o !== t);
      const page = await open(B, { token: tok[t] });
      for (const p of missing404) page.allow404.add(p);
      await goto(page, '#/queues?q=tenant-');
      await page.locator('#queue-list tbody tr', { hasText: 'tenant-' + t }).first().waitFor();
      const names = await page.locator('#queue-list tbody tr td:first-child').allInnerTexts();
      assert(names.includes('tenant-' + t) && names.includes('tenant-shared'), `${t} does not see its queues: ${JSON.stringify(names)}`);
      assert(!names.includes('tenant-' + other), `${t} sees ${other}'s queue: ${JSON.stringify(names)}`);
      assert(!(await page.locator('#queue-list th', { hasText: 'Tenant' }).count()), `${t}'s list has a tenant column`);
      const chip = await text(page, '#tenant-chip');
      assert(chip === 'tenant ' + t, `header says "${chip}", not tenant ${t}`);
      // The shared name is this tenant's queue: its one message is this tenant's.
      await goto(page, '#/queues/tenant-shared?tab=messages');
      await page.locator('main tbody tr', { hasText: t + '-shared' }).first().waitFor();
      const rows = await page.locator('main tbody tr').allInnerTexts();
      assert(rows.length === 1 && !rows[0].includes(other), `${t} sees in its tenant-shared: ${JSON.stringify(rows)}`);
      // Another tenant's queue answers as if it did not exist.
      for (const r of ['resources', 'status']) page.allow404.add(`/api/v1/${r}/queues/tenant-${other}`);
      await goto(page, '#/queues/tenant-' + other);
      await page.locator('main .alert', { hasText: 'not found' }).waitFor();
      clean(page, 'tenant ' + t);
      await page.screenshot({ path: `${OUT}/tenant-${t}-light-1440x900.png` });
      await close(page);
    }
  } finally {
    for (const t of tenants) {
      for (const q of ['tenant-shared', 'tenant-' + t]) await call(B, '/api/v1/resources/queues/' + q, { method: 'DELETE', token: tok[t] });
    }
  }
});

// ---------- broker stopped ----------

await test('broker stopped: the "Database unavailable" and "Broker unreachable" banners show and panels keep their data', async () => {
  // Broker C (auth off, same database) is only for this test: it gets killed.
  const page = await open(C);
  for (const p of missing404) page.allow404.add(p);
  await goto(page, '#/queues?q=orders');
  assert((await page.locator('#queue-list tbody tr').count()) > 0, 'no rows before the stop');
  // The database goes away: /health says so (503) and the banner names it. This part stays a
  // route fake: the brokers share one database (and the PostgreSQL server is shared with other
  // test runs), so taking it away for real would break brokers A and B and everything else on it;
  // the broker's own 503 answer is covered by the Go tests of /health.
  await page.route('**/health', (r) =>
    r.fulfill({ status: 503, contentType: 'application/json', body: JSON.stringify({ status: 'unhealthy', database: 'disconnected', maintenanceMode: false, popMaintenanceMode: false, fileBuffer: { pending: 3, failed: 0 } }) }),
  );
  await page.getByRole('button', { name: 'Refresh now' }).click();
  await page.locator('.banner', { hasText: 'Database unavailable' }).waitFor();
  await page.locator('.banner', { hasText: '3 spooled messages are draining' }).waitFor();
  await page.unroute('**/health');
  await page.getByRole('button', { name: 'Refresh now' }).click();
  await page.locator('.banner', { hasText: 'Database unavailable' }).waitFor({ state: 'detached' });
  // What the panel must keep is what the last answered refresh drew: that refresh may change
  // the rows (lag, rates and times move between the stats runs), and automatic refresh is off.
  await settle(page);
  assert(page.inflight === 0, `${page.inflight} requests still in flight before the stop`);
  const before = await page.locator('#queue-list tbody tr').allInnerTexts();
  // Then the broker itself, for real.
  process.kill(C_PID, 'SIGKILL');
  for (let i = 0; i < 600; i++) {
    const up = await fetch(C + '/health').then(() => true, () => false);
    if (!up) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  await page.getByRole('button', { name: 'Refresh now' }).click();
  await page.locator('.banner', { hasText: 'Broker unreachable' }).waitFor();
  await page.locator('#queue-list .age.stale').waitFor();
  const after = await page.locator('#queue-list tbody tr').allInnerTexts();
  assert(JSON.stringify(after) === JSON.stringify(before), 'panel lost or changed its data: ' + JSON.stringify(after));
  await page.screenshot({ path: `${OUT}/unreachable-light-1440x900.png` });
  page.problems.length = 0; // the refused requests are the point
  await close(page);
});

await browser.close();
const failed = results.filter((r) => !r.ok);
console.log(`\n${results.length - failed.length}/${results.length} passed in ${((Date.now() - t0) / 1000).toFixed(0)} s; screenshots in ${OUT}`);
process.exit(failed.length ? 1 : 0);

// pages.js: the sale page and the laboratory in a real browser (Debian's chromium, headless,
// driven by playwright-core): a buyer buys on / and sees the stock drop and the order become
// persisted; /lab shows the results table and runs one experiment. Saves screenshots of both
// pages into the run's folder, and into docs/ (the README's) when SECKILL_UPDATE_SCREENSHOTS=1.
// Usage: node pages.js SERVER_BIN WORKER_BIN (see run.sh).
'use strict';

const assert = require('node:assert/strict');
const {spawn} = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const {chromium} = require('playwright-core');

const TOKEN = 'browser-admin-token';
const SOURCE = path.resolve(__dirname, '../../..');
const [SERVER_BIN, WORKER_BIN] = process.argv.slice(2);
const DIR = path.join(process.env.SECKILL_TEST_DIR, 'browser');
// Where a screenshot goes: the run's folder, or docs/ when the README's should be renewed.
const shot = (name) =>
  process.env.SECKILL_UPDATE_SCREENSHOTS === '1' ? path.join(SOURCE, 'docs', name) : path.join(DIR, name);
const children = [];

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const {port} = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

function start(bin, env, log) {
  const out = fs.openSync(path.join(DIR, log), 'w');
  const child = spawn(bin, [], {cwd: SOURCE, env: {...process.env, ...env},
                                stdio: ['ignore', out, out]});
  children.push(child);
  return child;
}

async function stopAll() {
  await Promise.all(children.map(c => new Promise(resolve => {
    if (c.exitCode !== null || c.signalCode !== null) return resolve();
    c.once('exit', resolve);
    c.kill('SIGTERM');
  })));
}

async function waitHealthy(base) {
  for (let i = 0; i < 100; i++) {
    try {
      if ((await fetch(base + '/health')).ok) return;
    } catch (e) { /* not listening yet */ }
    await new Promise(r => setTimeout(r, 100));
  }
  throw new Error('seckill-server did not answer /health within 10 s');
}

async function api(base, method, urlPath, body) {
  const res = await fetch(base + urlPath, {
    method, headers: {Authorization: 'Bearer ' + TOKEN, 'Content-Type': 'application/json'},
    body: body === undefined ? undefined : JSON.stringify(body)});
  return {status: res.status, body: await res.json()};
}

// A small results file in the format of loadtest/experiments.sh.
function writeFixture(file) {
  const row = (strategy, family, rps, oversold, raceSold, verdict, documents) => ({
    strategy, family, requests: 20000, successes: 5000 + oversold, other_answers: 15000 - oversold,
    requests_per_s: rps, p50_ms: 20, p99_ms: 60, initial_stock: 5000,
    final_stock: oversold > 0 ? -oversold : 0, sold: 5000 + oversold, oversold,
    orders_in_pg: null, leftover_lock_keys: 0,
    race: {buyers: 50, successes: raceSold, stock: 10, sold: raceSold,
           oversold: Math.max(0, raceSold - 10), leftover_lock_keys: 0},
    verdict, documents_verdict: verdict, agrees: true, documents});
  const data = {
    settings: {stock: 5000, requests: 20000, concurrency: 200, delay_ms: 0,
               race: {stock: 10, buyers: 50, delay_ms: 100}, cpus: 2, tool: 'ab'},
    strategies: [
      row('local_unsafe', 'local', 8310.6, 0, 50, 'oversells', 'oversells (000 /v3/seckill)'),
      row('db_read_modify_write', 'db', 571.76, 15000, 50, 'oversells', '2000+/s, oversells (003)'),
      row('db_single_update', 'db', 1564.74, 0, 10, 'safe', '1950+/s, fastest DB method (003)'),
      row('db_for_update', 'db', 1280.57, 0, 10, 'safe', '600+/s (003)'),
      row('redis_lock', 'lock', 725.03, 0, 10, 'safe', '550-620/s (003)'),
      row('lua_reserve', 'redis', 7174.13, 0, 10, 'safe', 'fastest by far (000, 002)'),
    ]};
  fs.writeFileSync(file, JSON.stringify(data, null, 2));
  return data;
}

async function salePage(page, base) {
  const phone = await api(base, 'POST', '/api/v1/items', {name: 'Phone X', stock: 5});
  assert.equal(phone.status, 201, JSON.stringify(phone.body));
  await api(base, 'POST', '/api/v1/items', {name: 'Wireless earbuds', stock: 120});
  const gone = await api(base, 'POST', '/api/v1/items', {name: 'Limited sneakers', stock: 0});
  const id = phone.body.id;

  await page.goto(base + '/');
  const card = page.locator(`.item[data-id="${id}"]`);
  await card.locator('.remaining').filter({hasText: /^5$/}).waitFor();
  const soldOut = page.locator(`.item[data-id="${gone.body.id}"]`);
  assert.equal(await soldOut.locator('button.buy').textContent(), 'Sold out');
  assert.ok(await soldOut.locator('button.buy').isDisabled(), 'a sold-out item cannot be bought');

  await page.fill('#buyer', '1001');
  await card.locator('button.buy').click();
  // The remaining stock drops (from the answer, then from the next poll of the list).
  await card.locator('.remaining').filter({hasText: /^4$/}).waitFor();
  // The order moves from queued to persisted once the worker has written it.
  const status = page.locator('#orders .order .status').first();
  await status.filter({hasText: 'persisted'}).waitFor({timeout: 15000});
  const item = await api(base, 'GET', `/api/v1/items/${id}`);
  assert.equal(item.body.remaining, 4);
  assert.equal(item.body.persisted, 1);

  // The same buyer again: 409 already_purchased, said as a sentence.
  await card.locator('button.buy').click();
  await page.locator('#message.error').filter({hasText: 'has already bought'}).waitFor();
  await page.waitForTimeout(1200); // one more poll, so the screenshot shows settled stock
  await page.screenshot({path: shot('screenshot-sale.png')});
  console.log('browser_pages: / bought item', id, 'as buyer 1001; the order is persisted');
}

async function labPage(page, base, fixture) {
  await page.goto(base + '/lab');
  const rows = page.locator('#results tbody tr');
  await rows.first().waitFor();
  assert.equal(await rows.count(), fixture.strategies.length);
  assert.equal(await rows.nth(1).locator('td').first().textContent(), 'db_read_modify_write');
  assert.equal(await page.locator('#chart-rps svg rect').count() > 0, true, 'the chart is drawn');

  // One experiment from the form: a fresh item, concurrent purchases, the audit's verdict.
  await page.fill('#token', TOKEN);
  await page.locator('#strategy option[value="local_unsafe"]').waitFor({state: 'attached'});
  await page.selectOption('#strategy', 'local_unsafe');
  await page.fill('#stock', '3');
  await page.fill('#buyers', '12');
  await page.fill('#delay', '100');
  await page.click('#go');
  const verdict = page.locator('#verdict');
  await verdict.filter({hasText: /oversold \d+ units|did not oversell/}).waitFor({timeout: 30000});
  console.log('browser_pages: /lab shows', fixture.strategies.length, 'rows; experiment:',
              await verdict.textContent());
  await page.screenshot({path: shot('screenshot-lab.png'), fullPage: true});
}

async function main() {
  fs.mkdirSync(DIR, {recursive: true});
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const results = path.join(DIR, 'experiments.json');
  const fixture = writeFixture(results);
  start(SERVER_BIN, {SECKILL_PORT: String(port), SECKILL_ADMIN_TOKEN: TOKEN,
                     SECKILL_LAB_RESULTS: results}, 'server.log');
  start(WORKER_BIN, {SECKILL_WORKER_ID: 'browser'}, 'worker.log');
  await waitHealthy(base);

  const profile = fs.mkdtempSync(path.join(DIR, 'chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium', headless: true,
    viewport: {width: 1280, height: 860},
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync']});
  try {
    const page = context.pages()[0] || await context.newPage();
    const pageErrors = [];
    page.on('pageerror', e => pageErrors.push(e.message));
    await salePage(page, base);
    await labPage(page, base, fixture);
    assert.deepEqual(pageErrors, [], 'the pages raised no JavaScript error');
  } finally {
    await context.close();
  }
}

main().then(async () => {
  await stopAll();
  console.log('browser_pages: passed');
}, async (e) => {
  console.error('browser_pages: FAILED:', e && e.stack || e);
  console.error('browser_pages: logs in', DIR);
  await stopAll();
  process.exit(1);
});

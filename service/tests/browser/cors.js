// cors.js: a shop's page on another origin buys from seckill in Chromium (ctest browser_cors): the
// example shop of docs/examples/shop (its backend mints the buyer token at login, its page calls
// seckill with it) served on one port, seckill with cors_origins naming it on another. The buyer
// logs in, buys, sees the order and cancels it; the same page served from an origin seckill does
// not list cannot buy (the browser refuses the preflight's answer) and no order is made.
// Usage: node cors.js SERVER_BIN WORKER_BIN (see run.sh, SECKILL_BROWSER_TEST=cors.js).
'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const support = require('./support');
const {SOURCE, freePort, waitUp, api} = support;

const TOKEN = 'browser-cors-admin-token';
const SECRET = 'browser-cors-buyer-token-secret-of-at-least-32-bytes';
const SHOP = path.join(SOURCE, 'docs/examples/shop/server.js');
const [SERVER_BIN, WORKER_BIN] = process.argv.slice(2);
const DIR = path.join(process.env.SECKILL_TEST_DIR, 'browser-cors');

const start = (bin, args, env, log) => support.start(DIR, bin, args, env, log);
const admin = (base, method, urlPath, body) => api(base, TOKEN, method, urlPath, body);

// The page of the shop at origin logs buyer `user` in.
async function login(page, origin, item, user) {
  await page.goto(`${origin}/?item=${item}`);
  await page.fill('#user', String(user));
  await page.click('#login-button');
  await page.waitForFunction(() => document.querySelector('#who').textContent.includes('buyer'));
}

// Clicks Buy; what the page says then.
async function buy(page) {
  await page.click('#buy');
  await page.waitForFunction(() => /Order|failed/.test(document.querySelector('#status').textContent));
  return page.textContent('#status');
}

// Polls the admin API until order's status is `want`, up to 20 s.
async function waitStatus(base, order, want) {
  for (let i = 0; i < 200; i++) {
    const res = await admin(base, 'GET', `/api/v1/orders/${order}`);
    if (res.body.status === want) return;
    await new Promise(r => setTimeout(r, 100));
  }
  throw new Error(`order ${order} did not become ${want}`);
}

async function main() {
  const {chromium} = require('playwright-core');
  fs.mkdirSync(DIR, {recursive: true});
  const [port, shopPort, strangerPort] = [await freePort(), await freePort(), await freePort()];
  const base = `http://127.0.0.1:${port}`;
  const shop = `http://127.0.0.1:${shopPort}`;
  const stranger = `http://127.0.0.1:${strangerPort}`;
  start(SERVER_BIN, [], {SECKILL_PORT: String(port), SECKILL_ADMIN_TOKEN: TOKEN,
                         SECKILL_BUYER_AUTH: 'token', SECKILL_BUYER_TOKEN_SECRET: SECRET,
                         SECKILL_CORS_ORIGINS: `https://shop.example,${shop}`}, 'server.log');
  start(WORKER_BIN, [], {SECKILL_WORKER_ID: 'browser-cors'}, 'worker.log');
  for (const [p, log] of [[shopPort, 'shop.log'], [strangerPort, 'stranger.log']])
    start(process.execPath, [SHOP], {SHOP_PORT: String(p), SECKILL_URL: base,
                                     SECKILL_BUYER_TOKEN_SECRET: SECRET}, log);
  await waitUp(base + '/health');
  await waitUp(shop + '/');
  await waitUp(stranger + '/');

  const created = await admin(base, 'POST', '/api/v1/items', {name: 'Cross-origin tickets', stock: 5});
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const item = created.body.id;

  const profile = fs.mkdtempSync(path.join(DIR, 'chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium', headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync']});
  try {
    const page = context.pages()[0] || await context.newPage();
    const pageErrors = [];
    page.on('pageerror', e => pageErrors.push(e.message));

    // From the shop's origin: log in, buy, see the order, cancel it.
    await login(page, shop, item, 42);
    await page.waitForFunction(() => /5 left/.test(document.querySelector('#item').textContent));
    const said = await buy(page);
    assert.match(said, /^Order \d+ is yours: queued/, said);
    const order = said.match(/^Order (\d+)/)[1];
    const mine = await admin(base, 'GET', `/api/v1/orders/${order}`);
    assert.equal(mine.status, 200);
    assert.equal(mine.body.user_id, '42', 'the order is the logged-in buyer\'s, from the token');
    // A buyer's list holds persisted orders: the page shows the row once the worker has it and
    // the page reads the list again (it does not poll).
    await waitStatus(base, order, 'persisted');
    await page.click('#login-button'); // logs in again, which shows the orders anew
    await page.waitForSelector(`tr[data-order="${order}"]`);
    await page.waitForFunction((o) => /persisted/.test(
      document.querySelector(`tr[data-order="${o}"]`).textContent), order);
    await page.click(`tr[data-order="${order}"] button`);
    await page.waitForFunction(() => /cancelled/.test(document.querySelector('#status').textContent));
    assert.equal((await admin(base, 'GET', `/api/v1/orders/${order}`)).body.status, 'cancelled');
    // The page says "cancelled" first, then reads the item again: wait for that read.
    await page.waitForFunction(() => /5 left/.test(document.querySelector('#item').textContent),
                               null, {timeout: 10000});
    assert.match(await page.textContent('#item'), /5 left/, 'the unit came back');
    assert.deepEqual(pageErrors, [], 'the page raised no JavaScript error');

    // The same page from an origin that cors_origins does not name: the browser gets no
    // Access-Control-Allow-Origin and refuses, so nothing is bought.
    await login(page, stranger, item, 43);
    await page.waitForFunction(() => /refused/.test(document.querySelector('#status').textContent));
    assert.equal(await page.isDisabled('#buy'), true, 'not even the item could be read');
    await page.evaluate(() => { document.querySelector('#buy').disabled = false; });
    const refused = await buy(page);
    assert.match(refused, /Purchase failed: seckill refused this page/, refused);
    const theirs = await admin(base, 'GET', '/api/v1/orders?user_id=43');
    assert.equal(theirs.status, 200);
    assert.equal(theirs.body.orders.length, 0, 'no order for the refused page\'s buyer');
  } finally {
    await context.close();
  }
}

support.run('browser_cors', main, DIR);

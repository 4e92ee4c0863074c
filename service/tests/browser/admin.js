// admin.js: the operator's console (/admin) in Chromium (ctest browser_admin). Without a
// credential the page asks for one and reads nothing; a wrong one is refused. An admin signs in,
// the create form refuses bad fields in the page and shows the server's 400 beside the field it
// names (a page whose clock is an hour behind sends a window the server finds over), creates a
// sale with a window, watches its countdown reach zero and its figures move while a load of a few
// hundred purchases runs, restocks, finds an order by buyer, cancels it and finds it by id, lists
// the sale's orders by status and by page, starts a new round, archives the sale and keeps the
// credential through a reload. An orders:read credential is offered no form that changes
// anything and the server refuses those calls anyway; a payments credential, on a phone's width
// where the console does not scroll sideways, may mark an order paid and not cancel it. Every
// call the page makes is one the API documents. Saves run/screenshots/screenshot-admin.png
// (`make screenshots` copies it to docs/).
// Usage: node admin.js SERVER_BIN WORKER_BIN (see run.sh, SECKILL_BROWSER_TEST=admin.js); with
// no arguments it checks only the console's pure helpers, in node.
'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const support = require('./support');
const {SOURCE, freePort, waitUp} = support;

const ADMIN = 'browser-console-admin-token';
const PAYMENTS = 'browser-console-payments-token';
const READER = 'browser-console-orders-read-token';
const [SERVER_BIN, WORKER_BIN] = process.argv.slice(2);
const DIR = process.env.SECKILL_TEST_DIR && path.join(process.env.SECKILL_TEST_DIR, 'browser-admin');
const SHOTS = path.join(SOURCE, 'run', 'screenshots');

const api = (base, token, method, urlPath, body) => support.api(base, token, method, urlPath, body);
const rfc3339 = (ms) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
// A datetime-local input's value for a UTC time (the browser's zone is UTC here), as Chromium
// writes it back: without seconds when they are :00 (else playwright's fill says "Malformed").
const local = (ms) => rfc3339(ms).slice(0, 19).replace(/:00$/, '');
const wholeSecond = (ms) => Math.ceil(ms / 1000) * 1000;

// The console's pure helpers (web/static/admin.js exports them under node).
function helpers() {
  const c = require(path.join(SOURCE, 'web/static/admin.js'));
  const check = (values) => c.checkForm(c.CREATE_FIELDS, {listed: true, lab: false, ...values}, 0);
  assert.deepEqual(check({name: 'Lamp', stock: '5'}), {body: {name: 'Lamp', stock: 5}, errors: {}});
  assert.match(check({name: '', stock: '5'}).errors.name, /required/);
  assert.match(check({name: 'é'.repeat(101), stock: '5'}).errors.name, /1 to 200 bytes/, 'bytes, not characters');
  assert.match(check({name: 'x', stock: '1000000000001'}).errors.stock, /0 to 10\^12/);
  assert.match(check({name: 'x', stock: '05'}).errors.stock, /integer/, 'no leading zero');
  assert.match(check({name: 'x', stock: '1', per_buyer_limit: '1001'}).errors.per_buyer_limit, /1 to 1000/);
  assert.match(check({name: 'x', stock: '1', payment_timeout_s: '604801'}).errors.payment_timeout_s, /604800/);
  assert.match(check({name: 'x', stock: '1', segments: '65'}).errors.segments, /1 to 64/);
  assert.match(check({name: 'x', stock: '1', segments: '2', id: String(2 ** 40)}).errors.segments, /2\^40/);
  assert.match(check({name: 'x', stock: '1', segments: '2', lab: true}).errors.segments, /laboratory/);
  // The waiting room's terms, as room_terms.c judges them.
  const room = {name: 'x', stock: '1', admission: 'room', starts_at: '2030-01-01T00:00:00', admit_per_s: '2.5'};
  assert.deepEqual(check(room).errors, {});
  assert.equal(check(room).body.admit_per_s, 2.5);
  assert.equal(check({name: 'x', stock: '1', admission: 'race'}).body.admission, undefined, 'the default is not sent');
  assert.match(check({name: 'x', stock: '1', admit_burst: '3'}).errors.admit_burst, /term of a room/);
  assert.match(check({...room, starts_at: ''}).errors.starts_at, /needs starts_at/);
  assert.match(check({...room, admit_per_s: '0'}).errors.admit_per_s, /above 0/);
  assert.match(check({...room, admit_per_s: ''}).errors.admit_per_s, /required/);
  assert.match(check({...room, prequeue_opens_at: '2030-01-01T00:00:00'}).errors.prequeue_opens_at, /before starts_at/);
  assert.match(check({...room, admission_ttl_s: '86401'}).errors.admission_ttl_s, /1 to 86400/);
  assert.match(check({...room, admission: 'lottery'}).errors.admission, /one of "race", "room", "draw"/);
  assert.match(check({...room, admission: 'draw'}).errors.admit_per_s, /term of a room/, 'a draw has no room terms');
  assert.match(check({name: 'x', stock: '1', starts_at: '2026-11-22T20:00', ends_at: '2026-11-22T20:00'})
    .errors.ends_at, /after starts_at/);
  assert.match(c.checkForm(c.CREATE_FIELDS, {name: 'x', stock: '1', ends_at: '2026-11-22T20:00'},
                           Date.parse('2026-11-22T20:00:00Z')).errors.ends_at, /in the past/);
  assert.match(check({name: 'x', stock: '1', starts_at: '2026-02-30T10:00'}).errors.starts_at, /time/);
  assert.equal(check({name: 'x', stock: '1', listed: false}).body.listed, false);
  // A new round's bound: empty keeps the item's (left out), cleared sends null (no bound).
  assert.deepEqual(c.checkForm(c.RESET_FIELDS, {stock: '5', starts_at: '', ends_at: null}, 0).body,
                   {stock: 5, ends_at: null});
  assert.deepEqual(check({name: 'x', stock: '1', ends_at: null}).body,
                   {name: 'x', stock: 1}, 'a new sale has no bound to clear: none is none');
  assert.equal(c.rfc3339Of('2026-11-22T20:00'), '2026-11-22T20:00:00Z');
  assert.equal(c.rfc3339Of('1969-12-31T23:59:59'), null, 'the server takes years 1970 to 9999');
  // The server's 400 beside the field its message names first.
  assert.equal(c.fieldOfMessage(c.CREATE_FIELDS, 'ends_at must come after starts_at'), 'ends_at');
  assert.equal(c.fieldOfMessage(c.CREATE_FIELDS, 'an item of several segments must have an id below 2^40'),
               'segments');
  assert.equal(c.fieldOfMessage(c.CREATE_FIELDS, 'body is not valid JSON'), null);
  assert.equal(c.fieldOfMessage(c.RESTOCK_FIELDS, 'add must be an integer from 1 to 10^12'), 'add');
  // A countdown on this clock between two reads of the detail.
  const upcoming = {state: 'upcoming', remaining: 3, starts_in_ms: 5000, ends_in_ms: 9000, ends_at: 'x'};
  assert.deepEqual(c.liveState(upcoming, 0, 1000), {state: 'upcoming', note: 'opens in 0:04'});
  assert.deepEqual(c.liveState(upcoming, 0, 5000), {state: 'on_sale', note: 'closes in 0:04'});
  assert.equal(c.liveState(upcoming, 0, 9000).state, 'ended');
  const metrics = 'seckill_purchases_total{outcome="queued"} 9\nseckill_purchases_total{outcome="sold_out"} 2\n' +
    'seckill_purchases_total{outcome="sold_out_flag"} 3\nseckill_pending_orders 4\n';
  assert.deepEqual(c.refusalsOf(metrics), {sold_out: 5});
  assert.equal(c.gaugeOf(metrics, 'seckill_pending_orders'), 4);
  assert.deepEqual(c.rates([{t: 0, v: 0}, {t: 2000, v: 10}, {t: 3000, v: 10}]),
                   [{t: 2000, rate: 5}, {t: 3000, rate: 0}]);
  assert.match(c.chartSvg({'a<b': [{t: 1000, rate: 2}]}, 1000, 60000), /<polyline.*a&#60;b/s);
}

// Calls the page may make: every one a route of docs/openapi.yaml.
const DOCUMENTED = [
  /^GET \/admin$/, /^GET \/static\/admin\.(js|css)$/, /^GET \/static\/style\.css$/, /^GET \/metrics$/,
  /^(GET|POST) \/api\/v1\/items(\?.*)?$/, /^(GET|DELETE) \/api\/v1\/items\/\d+$/,
  /^POST \/api\/v1\/items\/\d+\/(stock|reset)$/, /^GET \/api\/v1\/items\/\d+\/orders(\?.*)?$/,
  /^GET \/api\/v1\/orders(\/\d+|\?.*)$/, /^POST \/api\/v1\/orders\/\d+\/(pay|cancel)$/,
];

// A new tab on /admin that records the calls it makes and its JavaScript errors.
async function openConsole(context, base) {
  const page = await context.newPage();
  page.calls = [];
  page.errors = [];
  page.on('request', r => {
    const u = new URL(r.url());
    if (u.origin === base) page.calls.push(`${r.method()} ${u.pathname}${u.search}`);
  });
  page.on('pageerror', e => page.errors.push(e.message));
  page.on('dialog', d => d.accept());
  await page.goto(base + '/admin');
  return page;
}

async function signIn(page, token, scope) {
  await page.fill('#credential', token);
  await page.click('#signin button[type=submit]');
  await page.locator('#who').filter({hasText: `scope ${scope}`}).waitFor();
}

const figure = (page, name) => page.locator(`#figures dd[data-figure="${name}"]`);

// No credential: the sign-in form and nothing else, not one call of the API; a wrong one refused.
async function withoutCredential(page) {
  await page.waitForTimeout(1000);
  assert.ok(await page.locator('#console').isHidden(), 'the console shows without a credential');
  assert.equal(await page.locator('#figures dd').count(), 0);
  assert.deepEqual(page.calls.filter(c => !/ \/(admin|static\/)/.test(c)), [], 'a call without a credential');
  await page.fill('#credential', 'not-a-credential-of-this-shop');
  await page.click('#signin button[type=submit]');
  await page.locator('#signin-message.error').filter({hasText: 'not a credential'}).waitFor();
  assert.ok(await page.locator('#console').isHidden());
  assert.equal(await page.evaluate(() => sessionStorage.length), 0, 'a refused credential is not kept');
}

// Fields the page refuses itself; nothing is sent.
async function pageValidation(page) {
  await page.click('#create-box summary');
  const before = page.calls.length;
  await page.fill('#create-name', '');
  await page.fill('#create-stock', '12x');
  await page.fill('#create-per_buyer_limit', '0');
  await page.click('#create button[type=submit]');
  await page.locator('#create-name-error').filter({hasText: 'name is required'}).waitFor();
  assert.match(await page.textContent('#create-stock-error'), /integer from 0 to 10\^12/);
  assert.match(await page.textContent('#create-per_buyer_limit-error'), /1 to 1000/);
  assert.equal(await page.getAttribute('#create-stock', 'aria-invalid'), 'true');
  assert.equal(page.calls.slice(before).filter(c => c.startsWith('POST')).length, 0, 'a refused form was sent');
  await page.fill('#create-per_buyer_limit', '');
}

// A page whose clock is an hour behind finds a window open that the server finds over: the
// server's 400 shows beside ends_at. Playwright's clock is the context's: every page's from now.
async function serverRefusal(context, base) {
  const page = await context.newPage();
  page.on('dialog', d => d.accept());
  try {
    const now = Date.now();
    await page.clock.setFixedTime(now - 3600 * 1000);
    await page.goto(base + '/admin');
    await signIn(page, ADMIN, 'admin');
    await page.click('#create-box summary');
    await page.fill('#create-name', 'Too late');
    await page.fill('#create-stock', '5');
    await page.fill('#create-ends_at', local(now - 600 * 1000));
    await page.click('#create button[type=submit]');
    await page.locator('#create-ends_at-error').filter({hasText: 'ends_at is in the past'}).waitFor();
    assert.match(await page.textContent('#create-message'), /Refused \(400\)/);
  } finally {
    await page.close();
  }
}

// Fires `n` purchases (buyers from `first`) in waves of 40 every 250 ms: how many got 202.
async function load(base, item, first, n) {
  let accepted = 0;
  for (let i = 0; i < n; i += 40) {
    const wave = [];
    for (let j = i; j < Math.min(n, i + 40); j++) {
      wave.push(fetch(`${base}/api/v1/items/${item}/purchase`, {
        method: 'POST', headers: {'Content-Type': 'application/json'},
        body: JSON.stringify({user_id: String(first + (j % 330))})}).then(r => r.status === 202 && accepted++));
    }
    await Promise.all(wave);
    await new Promise(r => setTimeout(r, 250));
  }
  return accepted;
}

// Creates a sale opening in ~4 s through the form; its countdown reaches zero and it opens;
// under a load its figures move and the chart draws; a restock shows the server's answer.
async function createAndWatch(page, base) {
  const startMs = wholeSecond(Date.now() + 3000);
  await page.fill('#create-name', 'Console drop');
  await page.fill('#create-stock', '300');
  await page.fill('#create-starts_at', local(startMs));
  await page.fill('#create-ends_at', local(startMs + 3600 * 1000));
  await page.fill('#create-payment_timeout_s', '600');
  await page.click('#create button[type=submit]');
  await page.locator('#create-message.ok').filter({hasText: /Sale \d+ created \(upcoming\)/})
    .waitFor({state: 'attached'});
  const id = Number((await page.textContent('#create-message')).match(/Sale (\d+)/)[1]);
  await page.locator('#live-countdown').filter({hasText: /^opens in 0:0\d$/}).waitFor();
  assert.equal(await page.textContent('#live-state'), 'upcoming');
  await page.locator('#live-state').filter({hasText: 'on sale'}).waitFor({timeout: 10000});
  const late = Date.now() - startMs;
  assert.ok(late > -200 && late < 2500, `the sale showed open ${late} ms after its start`);
  assert.match(await page.textContent('#live-countdown'), /^closes in (1:00:00|59:\d\d)$/);

  // A few hundred purchases: 300 units for 330 buyers, some twice (limit 1): refusals.
  const seen = new Set();
  const watcher = setInterval(async () => {
    try { seen.add(await figure(page, 'sold').textContent({timeout: 200})); } catch (e) { /* between draws */ }
  }, 200);
  const accepted = await load(base, id, 1, 420);
  assert.equal(accepted, 300, 'every unit sold, none twice');
  await figure(page, 'sold').filter({hasText: /^300$/}).waitFor({timeout: 5000});
  clearInterval(watcher);
  await figure(page, 'remaining').filter({hasText: /^0$/}).waitFor();
  await page.locator('#live-state').filter({hasText: 'sold out'}).waitFor();
  const moves = [...seen].map(s => Number(s.replace(/,/g, ''))).filter(Number.isFinite);
  assert.ok(moves.length >= 2, `the figures did not move: ${[...seen]}`);
  await page.locator('#chart-caption').filter({hasText: /sold out\/s/}).waitFor({timeout: 8000})
    .catch(async () => { throw new Error(`no refusals charted: ${await page.textContent('#chart-caption')}`); });
  await figure(page, 'persisted').filter({hasText: /^300$/}).waitFor({timeout: 15000});
  assert.match(await page.textContent('#lag'), /^Queue to PostgreSQL: 0 units not yet written/);
  assert.ok(await page.locator('#chart svg polyline').count() >= 2, 'the chart draws sales and refusals');
  console.log('browser_admin: sale', id, 'opened', late, 'ms after its start; sold seen as', moves.join(' '));
  await page.screenshot({path: path.join(SHOTS, 'screenshot-admin.png'), fullPage: true});

  await page.fill('#restock-add', '50');
  await page.click('#restock button[type=submit]');
  await page.locator('#steer-message.ok').filter({hasText: 'Restocked: 50 remaining'}).waitFor();
  await figure(page, 'remaining').filter({hasText: /^50$/}).waitFor();
  return id;
}

// Buyer 7's order found and cancelled; the sale's orders by status and by page.
async function orders(page, base, id) {
  await page.fill('#buyer-id', '7');
  await page.click('#by-buyer button');
  const row = page.locator('#orders tbody tr').first();
  await row.locator('td.status').filter({hasText: 'persisted'}).waitFor();
  const order = await row.getAttribute('data-order');
  assert.ok(await row.locator('button.do-pay').isVisible(), 'admin may mark paid too');
  await row.locator('button.do-cancel').click();
  await page.locator(`#orders tr[data-order="${order}"] td.status`).filter({hasText: 'cancelled'}).waitFor();
  await page.locator('#orders-message.ok').filter({hasText: 'back on sale'}).waitFor();
  assert.equal((await api(base, ADMIN, 'GET', `/api/v1/orders/${order}`)).body.status, 'cancelled');
  await figure(page, 'remaining').filter({hasText: /^51$/}).waitFor();
  await page.fill('#order-id', order);
  await page.click('#by-id button');
  await page.locator('#orders-message').filter({hasText: `Order ${order}`}).waitFor();
  assert.equal(await page.locator('#orders tbody tr').count(), 1);
  assert.equal(await page.locator('#orders tbody tr td.status').textContent(), 'cancelled');
  assert.equal(await page.locator('#orders tbody tr button').count(), 0, 'a cancelled order is settled');

  await page.selectOption('#item-status', 'cancelled');
  await page.click('#by-item button');
  await page.locator('#orders-message').filter({hasText: /\(cancelled\)/}).waitFor();
  assert.equal(await page.locator('#orders tbody tr').count(), 1);
  await page.selectOption('#item-status', '');
  await page.click('#by-item button');
  await page.locator('#next-page').waitFor();
  const first = await page.locator('#orders tbody tr').first().getAttribute('data-order');
  assert.equal(await page.locator('#orders tbody tr').count(), 20);
  await page.click('#next-page');
  await page.locator('#orders tbody tr').first().and(page.locator(`:not([data-order="${first}"])`)).waitFor();
  assert.ok(BigInt(await page.locator('#orders tbody tr').first().getAttribute('data-order')) > BigInt(first),
            'the next page goes on from the last id');
  await page.click('#first-page');
  await page.locator(`#orders tbody tr[data-order="${first}"]`).waitFor();
}

// A new round with its limit, its start kept and its end cleared, then the archive; the archived
// sale behind the switch.
async function roundAndArchive(page, base, id) {
  await page.fill('#reset-stock', '10');
  await page.fill('#reset-per_buyer_limit', '2');
  await page.check('#reset input[name="ends_at-none"]');
  await page.click('#reset button[type=submit]');
  await page.locator('#steer-message.ok').filter({hasText: 'Round 2 started: 10 units'}).waitFor();
  await figure(page, 'round').filter({hasText: /^2$/}).waitFor();
  const round = (await api(base, ADMIN, 'GET', `/api/v1/items/${id}`)).body;
  assert.equal(round.per_buyer_limit, 2);
  assert.equal(round.ends_at, null, 'the end cleared: no bound');
  assert.notEqual(round.starts_at, null, 'the start kept');
  assert.equal(await page.textContent('#live-countdown'), '', 'no end, no countdown');

  await page.click('#archive');
  await page.locator('#steer-message.ok').filter({hasText: `Sale ${id} archived`}).waitFor();
  await page.locator('#live-state').filter({hasText: 'archived'}).waitFor();
  await page.locator(`#sales tr[data-id="${id}"]`).waitFor({state: 'detached'});
  await page.check('#show-archived');
  await page.locator(`#sales tr[data-id="${id}"][data-state="archived"]`).waitFor();
  await page.uncheck('#show-archived');
  // The tab keeps the credential through a reload.
  await page.reload();
  await page.locator('#who').filter({hasText: 'scope admin'}).waitFor();
  assert.equal(await page.inputValue('#credential'), '', 'the credential is never shown again');
}

// A waiting room's sale made with the form: its line's counts among the figures, live.
async function roomSale(page, base) {
  const before = await page.textContent('#create-message'); // the first sale's
  await page.click('#create-box summary');
  await page.fill('#create-name', 'Console room');
  await page.fill('#create-stock', '5');
  await page.fill('#create-starts_at', local(wholeSecond(Date.now() + 3600 * 1000)));
  await page.fill('#create-ends_at', '');
  await page.fill('#create-payment_timeout_s', '');
  await page.selectOption('#create-admission', 'room');
  await page.fill('#create-admit_per_s', '2');
  await page.click('#create button[type=submit]');
  await page.waitForFunction((prev) => {
    const m = document.querySelector('#create-message');
    return m.classList.contains('ok') && /created \(upcoming\)/.test(m.textContent) && m.textContent !== prev;
  }, before);
  const id = Number((await page.textContent('#create-message')).match(/Sale (\d+)/)[1]);
  await figure(page, 'room_joined').filter({hasText: /^0$/}).waitFor();
  const join = await fetch(`${base}/api/v1/items/${id}/queue`, {
    method: 'POST', headers: {'Content-Type': 'application/json'}, body: JSON.stringify({user_id: '41'})});
  assert.ok(join.status === 200 || join.status === 201, `joining the line answered ${join.status}`);
  await figure(page, 'room_joined').filter({hasText: /^1$/}).waitFor({timeout: 5000});
}

// orders:read: nothing that changes a sale or an order is offered, and the server refuses it.
async function narrower(context, base, id) {
  const page = await openConsole(context, base);
  try {
    await page.locator('#signin').waitFor();
    assert.ok(await page.locator('#console').isHidden(), 'another tab needs the credential again');
    await signIn(page, READER, 'orders:read');
    assert.ok(await page.locator('#create-box').isHidden(), 'orders:read is offered the create form');
    await page.check('#show-archived');
    await page.locator(`#sales tr[data-id="${id}"] button.watch`).click();
    await figure(page, 'round').filter({hasText: /^2$/}).waitFor();
    assert.ok(await page.locator('#live .steer').isHidden(), 'orders:read is offered restock and reset');
    await page.fill('#buyer-id', '8');
    await page.click('#by-buyer button');
    await page.locator('#orders tbody tr').first().waitFor();
    assert.equal(await page.locator('#orders button').count(), 0, 'orders:read may cancel or pay');
    for (const [method, p, body] of [['POST', '/api/v1/items', {name: 'x', stock: 1}],
                                     ['POST', `/api/v1/items/${id}/stock`, {add: 1}],
                                     ['POST', `/api/v1/items/${id}/reset`, {stock: 1}],
                                     ['DELETE', `/api/v1/items/${id}`, undefined]]) {
      const res = await api(base, READER, method, p, body);
      assert.equal(res.status, 403, `${method} ${p} with orders:read: ${JSON.stringify(res.body)}`);
    }
    const order = await page.locator('#orders tbody tr').first().getAttribute('data-order');
    assert.equal((await api(base, READER, 'POST', `/api/v1/orders/${order}/cancel`, {})).status, 403);
    assert.equal((await api(base, READER, 'POST', `/api/v1/orders/${order}/pay`, {})).status, 403);
    assert.deepEqual(page.errors, []);
  } finally {
    await page.close();
  }

  // payments, on a phone (390 CSS px): Mark paid and no Cancel; the console, a sale watched,
  // does not scroll sideways.
  const pay = await openConsole(context, base);
  try {
    await pay.setViewportSize({width: 390, height: 844});
    await signIn(pay, PAYMENTS, 'payments');
    assert.ok(await pay.locator('#create-box').isHidden());
    await pay.fill('#buyer-id', '9');
    await pay.click('#by-buyer button');
    const row = pay.locator('#orders tbody tr').first();
    await row.locator('button.do-pay').waitFor();
    assert.equal(await row.locator('button.do-cancel').count(), 0, 'payments may cancel');
    await row.locator('button.do-pay').click();
    await row.locator('td.status').filter({hasText: 'paid'}).waitFor();
    assert.equal((await api(base, PAYMENTS, 'POST', '/api/v1/items', {name: 'x', stock: 1})).status, 403);
    await pay.check('#show-archived');
    await pay.locator(`#sales tr[data-id="${id}"] button.watch`).click();
    await figure(pay, 'round').waitFor();
    const m = await pay.evaluate(() => ({page: document.documentElement.scrollWidth, viewport: innerWidth}));
    assert.ok(m.page <= m.viewport, `the console scrolls sideways on a phone: ${JSON.stringify(m)}`);
    await pay.click('#signout');
    await pay.locator('#signin').waitFor();
    assert.equal(await pay.evaluate(() => sessionStorage.length), 0, 'signed out, the credential is gone');
    assert.deepEqual(pay.errors, []);
  } finally {
    await pay.close();
  }
}

async function main() {
  helpers();
  fs.mkdirSync(DIR, {recursive: true});
  fs.mkdirSync(SHOTS, {recursive: true});
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env = {SECKILL_PORT: String(port), SECKILL_ADMIN_TOKEN: ADMIN, SECKILL_PAYMENTS_TOKENS: PAYMENTS,
               SECKILL_ORDERS_READ_TOKENS: READER, SECKILL_RATE_LIMIT_PER_S: '0'};
  support.start(DIR, SERVER_BIN, [], env, 'server.log');
  support.start(DIR, WORKER_BIN, [], {SECKILL_WORKER_ID: 'browser-admin'}, 'worker.log');
  await waitUp(base + '/health');
  const context = await support.chromium(DIR, {viewport: {width: 1280, height: 900}, timezoneId: 'UTC',
                                               locale: 'en-GB'});
  try {
    const t0 = Date.now();
    const times = [];
    const step = async (name, f) => {
      const t = Date.now();
      const v = await f();
      times.push(`${name} ${Date.now() - t}`);
      return v;
    };
    const page = await openConsole(context, base);
    await step('anonymous', () => withoutCredential(page));
    await step('sign-in', () => signIn(page, ADMIN, 'admin'));
    await step('validation', () => pageValidation(page));
    const id = await step('create and watch', () => createAndWatch(page, base));
    await step('orders', () => orders(page, base, id));
    await step('round and archive', () => roundAndArchive(page, base, id));
    await step('room sale', () => roomSale(page, base));
    const undocumented = page.calls.filter(c => !DOCUMENTED.some(re => re.test(c)));
    assert.deepEqual(undocumented, [], 'the console called a route the API does not document');
    assert.deepEqual(page.errors, [], 'the console raised no JavaScript error');
    await step('narrower scopes, a phone', () => narrower(context, base, id));
    // Last: the fixed clock is the whole context's.
    await step('server refusal', () => serverRefusal(context, base));
    console.log('browser_admin:', page.calls.length, 'calls, all documented;', Date.now() - t0, 'ms:',
                times.join(', '));
  } finally {
    await context.close();
  }
}

if (!SERVER_BIN) {
  helpers();
  console.log('browser_admin: the console\'s helpers passed (no server, no browser)');
  process.exit(0);
}

support.run('browser_admin', main, DIR);

// pages.js: the sale page and the laboratory in a real browser (Debian's chromium, headless,
// driven by playwright-core): a buyer buys on / and sees the stock drop and the order become
// persisted, a sale counts down and opens on the second, a quantity takes several units, an ended
// sale cannot be bought; "Your orders" counts down the time to pay, cancels, pays and survives a
// reload, and an unpaid order expires; on a phone the orders fit the screen; a buyer token's
// refusal goes away once a token passes; /lab shows the committed results and runs one experiment, and says the laboratory
// is off on a server without it.
// Saves screenshots of both pages into run/screenshots/ of the source tree (`make screenshots`
// copies them to docs/, the README's). Usage: node pages.js SERVER_BIN WORKER_BIN (see run.sh);
// seckill-admin is taken from SERVER_BIN's folder. With no arguments it checks only the sale
// page's pure helpers, in node, without server or browser.
'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const support = require('./support');
const {SOURCE, freePort, waitUp} = support;

const TOKEN = 'browser-admin-token';
const [SERVER_BIN, WORKER_BIN] = process.argv.slice(2);
// The run's folder (run.sh checks SECKILL_TEST_DIR); none when only the helpers are checked.
const DIR = process.env.SECKILL_TEST_DIR && path.join(process.env.SECKILL_TEST_DIR, 'browser');
// Where a screenshot goes: one folder under run/ for every run, so that it outlives the run's
// folder (removed after a green run); only `make screenshots` copies them into docs/.
const SHOTS = path.join(SOURCE, 'run', 'screenshots');
const shot = (name) => path.join(SHOTS, name);

const start = (bin, env, log) => support.start(DIR, bin, [], env, log);
const waitHealthy = (base) => waitUp(base + '/health');
const api = (base, method, urlPath, body) => support.api(base, TOKEN, method, urlPath, body);

// A new item's view, made through the admin API.
async function createItem(base, fields) {
  const res = await api(base, 'POST', '/api/v1/items', fields);
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body;
}

// A whole second as RFC 3339 ("2026-11-22T20:00:05Z"). The server's clock (Redis's) is this
// machine's, so the test's Date.now() and the sale window agree.
const rfc3339 = (ms) => new Date(ms).toISOString().replace('.000Z', 'Z');
const wholeSecond = (ms) => Math.ceil(ms / 1000) * 1000;

// The sale page's pure helpers (web/static/app.js, which exports them under node): counts that
// fit a card, countdowns, a sale's state between two polls, the sentences of the refusals.
function helpers() {
  const app = require(path.join(SOURCE, 'web/static/app.js'));
  assert.equal(app.compact(9999), '9,999');
  assert.equal(app.compact(12345), '12.3k');
  assert.equal(app.compact(1234567), '1.2M');
  assert.equal(app.compact(2300000), '2.3M', 'no 2.2999... through a double');
  assert.equal(app.compact(999999), '999k', 'truncated: a card never shows more than is left');
  assert.equal(app.compact(1e12), '1T');
  assert.equal(app.countdown(5000), '0:05');
  assert.equal(app.countdown(4001), '0:05', 'rounded up: 0:00 only when the time is up');
  assert.equal(app.countdown(0), '0:00');
  assert.equal(app.countdown(((3 * 60 + 4) * 60 + 5) * 1000), '3:04:05');
  assert.equal(app.countdown((((2 * 24 + 3) * 60 + 4) * 60 + 5) * 1000), '2d 3:04:05');

  // A view that arrived at 100 ms of the page's clock: open at 5,100, over at 9,100.
  const view = {state: 'upcoming', remaining: 3, starts_in_ms: 5000, ends_in_ms: 9000};
  const sale = app.saleOf(view, 100);
  assert.equal(app.saleState(sale, 5099.9), 'upcoming');
  assert.equal(app.saleState(sale, 5100), 'on_sale');
  assert.equal(app.saleState(sale, 9100), 'ended');
  assert.equal(app.saleState({...sale, remaining: 0}, 5100), 'sold_out');
  assert.deepEqual(app.showing(sale, 1100), {state: 'upcoming', note: 'Starts in 0:04', button: 'Buy'});
  // The start beside the countdown, on the buyer's wall clock; seconds only when it has some.
  assert.equal(app.startTime('2026-11-22T20:00:00Z', 'UTC', 'en-GB'), 'Sun 22 Nov, 20:00');
  assert.equal(app.startTime('2026-11-22T20:00:05Z', 'UTC', 'en-GB'), 'Sun 22 Nov, 20:00:05');
  assert.equal(app.startTime('2026-11-22T20:00:00Z', 'Asia/Tokyo', 'en-GB'), 'Mon 23 Nov, 05:00');
  const dated = app.saleOf({...view, starts_at: '2026-11-22T20:00:05Z'}, 100);
  assert.match(app.showing(dated, 1100).note, /^Starts in 0:04 \(.*\d\d:\d\d:05\)$/);
  assert.equal(app.nextChange(sale, 1350), 750, 'the next whole second of the countdown');
  assert.equal(app.nextChange(sale, 5100), 1000, 'on sale, the countdown to the end goes on');
  assert.equal(app.nextChange(app.saleOf({...view, state: 'on_sale', ends_in_ms: 0}, 0), 0), Infinity);
  const ended = app.saleOf({state: 'ended', remaining: 3, starts_in_ms: 0, ends_in_ms: 0}, 100);
  assert.equal(app.showing(ended, 100).button, 'Ended');

  const said = (body) => app.sentence(409, body, '7', 'Tickets');
  assert.match(said({error: 'not_started', starts_in_ms: 1234}), /opens in 0:02/);
  assert.match(said({error: 'ended'}), /has ended/);
  assert.match(said({error: 'limit_reached', bought: 1, per_buyer_limit: 1}), /has already bought/);
  assert.match(said({error: 'limit_reached', bought: 1, per_buyer_limit: 3}), /at most 2 more/);
  assert.match(said({error: 'limit_reached', bought: 3, per_buyer_limit: 3}), /bought 3 .* the most/);
  assert.match(said({error: 'insufficient_stock', remaining: 1}), /Only 1 of “Tickets” is left/);
  assert.match(app.sentence(400, {error: 'invalid', message: 'quantity is above 1000'}),
               /failed: quantity is above 1000/);
  assert.match(app.sentence(401, {error: 'unauthorized', message: 'bad token'}), /buyer token/);

  // An order's payment cell: the time left to pay by the page's clock, then what became of it.
  const awaiting = {status: 'persisted', pay_by: '2026-11-22T20:15:00Z'};
  assert.deepEqual(app.paying(awaiting, 30100, 100), {state: 'awaiting', note: 'pay within 0:30'});
  assert.equal(app.paying(awaiting, 30100, 30100).state, 'due', 'at the deadline the time is up');
  assert.equal(app.paying({status: 'persisted', pay_by: null}, 100, 0).state, 'final');
  assert.equal(app.paying({status: 'queued'}, null, 0).state, 'queued');
  assert.match(app.paying({status: 'expired'}, null, 0).note, /back on sale/);
  assert.match(app.orderSentence(409, {error: 'expired'}, '9', 'pay'), /Order 9 has expired/);
  assert.match(app.orderSentence(409, {error: 'paid'}, '9', 'cancel'), /no longer be cancelled/);
  assert.match(app.orderSentence(401, null, '9', 'pay'), /admin token is wrong/);
  assert.match(app.orderSentence(404, null, '9', 'cancel'), /not one of your orders/);
  assert.equal(app.tokenBuyer('42.1795442435.9gcgkdvVHWbZY32aR_nOkaUAEbt_F3N6gtmfkCbo2Xg'), '42');
  assert.equal(app.tokenBuyer('042.1795442435.9gcgkdvVHWbZY32aR_nOkaUAEbt_F3N6gtmfkCbo2Xg'), null);
}

// The committed results of `make experiments` (loadtest/results/experiments.json, every
// strategy), copied to `file` for the server's lab_results: the page and its screenshot show what
// the README describes.
function labResults(file) {
  fs.copyFileSync(path.join(SOURCE, 'loadtest/results/experiments.json'), file);
  const data = JSON.parse(fs.readFileSync(file, 'utf8'));
  assert.ok(data.strategies.length >= 20, `only ${data.strategies.length} strategies committed`);
  return data;
}

async function salePage(page, base) {
  const id = (await createItem(base, {name: 'Phone X', stock: 5})).id;
  await createItem(base, {name: 'Wireless earbuds', stock: 120});
  const gone = await createItem(base, {name: 'Limited sneakers', stock: 0});

  await page.goto(base + '/');
  const card = page.locator(`.item[data-id="${id}"]`);
  await card.locator('.remaining').filter({hasText: /^5$/}).waitFor();
  assert.ok(await card.locator('.quantity').isHidden(), 'one per buyer: no quantity to choose');
  const soldOut = page.locator(`.item[data-id="${gone.id}"]`);
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
  // The message that said "It is being saved…" now says it is saved.
  await page.locator('#message.ok').filter({hasText: /^Order \d+ is saved: “Phone X” is yours\. Pay for it/})
    .waitFor({timeout: 5000});

  // The same buyer again: 409 limit_reached (the limit of one), said as a sentence.
  await card.locator('button.buy').click();
  await page.locator('#message.error').filter({hasText: 'has already bought'}).waitFor();
  console.log('browser_pages: / bought item', id, 'as buyer 1001; the order is persisted');
}

// The browser's Date.now() when a disabled button is enabled, watched in the page itself (a
// poll from here would blur the moment by its interval); null after `ms`.
function whenEnabled(button, ms) {
  return button.evaluate((b, ms) => new Promise(resolve => {
    const check = () => !b.disabled && resolve(Date.now());
    new MutationObserver(check).observe(b, {attributes: true});
    check();
    setTimeout(() => resolve(null), ms);
  }), ms);
}

// A sale that starts in a few seconds counts down with its button disabled, opens on the second
// by the server's clock, and then sells.
async function upcomingSale(page, base) {
  const startMs = wholeSecond(Date.now() + 5000);
  const item = await createItem(base, {name: 'Midnight drop', stock: 10, starts_at: rfc3339(startMs)});
  assert.equal(item.state, 'upcoming');
  const card = page.locator(`.item[data-id="${item.id}"]`);
  // The context's clock is UTC: the start's time of day is the RFC 3339 one.
  const clock = rfc3339(startMs).slice(11, 19).replace(/:00$/, '');
  const note = await card.locator('.note').filter({hasText: /^Starts in 0:0\d \(/});
  await note.waitFor();
  assert.ok((await note.textContent()).endsWith(`, ${clock})`),
            `the start ${clock} is not beside the countdown: ${await note.textContent()}`);
  assert.ok(await card.locator('button.buy').isDisabled(), 'an upcoming sale cannot be bought');

  const opened = await whenEnabled(card.locator('button.buy'), 15000);
  assert.notEqual(opened, null, 'the button did not open within 15 s');
  const late = opened - startMs;
  assert.ok(late >= 0, `the button opened ${-late} ms before the sale`);
  assert.ok(late < 1000, `the button opened ${late} ms after the sale`);
  await card.locator('button.buy').click();
  await card.locator('.remaining').filter({hasText: /^9$/}).waitFor();
  await page.locator('#message.ok').filter({hasText: 'Midnight drop'}).waitFor();
  console.log('browser_pages: / item', item.id, 'opened', late, 'ms after its start and sold');
}

// A limit of 3 per buyer offers a quantity: 2 units take 2 of the stock, 2 more pass the limit.
async function quantities(page, base) {
  const item = await createItem(base, {name: 'Concert tickets', stock: 50, per_buyer_limit: 3});
  const card = page.locator(`.item[data-id="${item.id}"]`);
  await card.locator('.remaining').filter({hasText: /^50$/}).waitFor();
  assert.ok(await card.locator('.quantity').isVisible(), 'a limit above one offers a quantity');
  await card.locator('.quantity').fill('2');
  await card.locator('button.buy').click();
  await card.locator('.remaining').filter({hasText: /^48$/}).waitFor();
  assert.equal((await api(base, 'GET', `/api/v1/items/${item.id}`)).body.remaining, 48);
  assert.equal(await page.locator('#orders .order .units').first().textContent(), '2');
  // Saved: the buyer's order lock is gone, and the limit answers the next press.
  await page.locator('#orders .order .status').first().filter({hasText: 'persisted'})
    .waitFor({timeout: 15000});

  await card.locator('button.buy').click();
  await page.locator('#message.error').filter({hasText: 'at most 1 more'}).waitFor();
  assert.equal((await api(base, 'GET', `/api/v1/items/${item.id}`)).body.remaining, 48);
}

// An ended sale says so and cannot be bought; a count too large for its card is shortened, the
// exact number in its title; a sale two hours ahead counts down in hours.
async function endedAndLarge(page, base) {
  const now = Date.now();
  // A window cannot be created already over (400): this one ends a second or two from now.
  const endsMs = wholeSecond(now + 1000);
  const ended = await createItem(base, {name: 'Last season', stock: 7,
    starts_at: rfc3339(wholeSecond(now - 120000)), ends_at: rfc3339(endsMs)});
  await new Promise(r => setTimeout(r, endsMs - Date.now() + 200));
  assert.equal((await api(base, 'GET', `/api/v1/items/${ended.id}`)).body.state, 'ended');
  const big = await createItem(base, {name: 'Console launch', stock: 1234567,
                                      starts_at: rfc3339(wholeSecond(now + 7200000))});

  const card = page.locator(`.item[data-id="${ended.id}"]`);
  await card.locator('.note').filter({hasText: /ended/}).waitFor();
  assert.equal(await card.locator('button.buy').textContent(), 'Ended');
  assert.ok(await card.locator('button.buy').isDisabled(), 'an ended sale cannot be bought');

  const remaining = page.locator(`.item[data-id="${big.id}"] .remaining`);
  await remaining.filter({hasText: /^1\.2M$/}).waitFor();
  assert.equal(await remaining.getAttribute('title'), '1,234,567');
  assert.match(await page.locator(`.item[data-id="${big.id}"] .note`).textContent(),
               /^Starts in (2:00:00|1:59:\d\d) \(.+\)$/);
}

// An item with 30 s to pay: the buyer's order shows a countdown under "Your orders", Cancel puts
// the unit back on sale, Pay (demo) asks for the admin token once, and after a reload the list
// is still there. An item with 2 s to pay: the order expires by itself and its unit comes back.
async function ordersToPay(page, base) {
  const item = await createItem(base, {name: 'Pay-later lamp', stock: 3, payment_timeout_s: 30});
  const card = page.locator(`.item[data-id="${item.id}"]`);
  const rowsOf = (name) => page.locator('#orders .order', {has: page.locator('.iname', {hasText: name})});
  await card.locator('.remaining').filter({hasText: /^3$/}).waitFor();
  await card.locator('button.buy').click();
  const row = rowsOf('Pay-later lamp').first();
  await row.locator('.status').filter({hasText: 'persisted'}).waitFor({timeout: 15000});
  const left = row.locator('.left');
  await left.filter({hasText: /^pay within 0:(30|2\d)$/}).waitFor();
  const before = await left.textContent();
  await left.filter({hasNotText: before}).waitFor({timeout: 3000}); // it ticks by itself
  assert.ok(await row.locator('button.do-pay').isVisible(), 'an order awaiting payment can be paid');

  await row.locator('button.do-cancel').click();
  await row.locator('.status').filter({hasText: 'cancelled'}).waitFor();
  await page.locator('#order-message.ok').filter({hasText: 'back on sale'}).waitFor();
  assert.ok(await row.locator('button.do-cancel').isHidden(), 'a cancelled order has no buttons');
  await card.locator('.remaining').filter({hasText: /^3$/}).waitFor();
  const view = (await api(base, 'GET', `/api/v1/items/${item.id}`)).body;
  assert.equal(view.remaining, 3);
  assert.equal(view.cancelled, 1);

  // The buyer may buy again; Pay (demo) asks for the admin token once, as the provider would pay.
  await card.locator('button.buy').click();
  await card.locator('.remaining').filter({hasText: /^2$/}).waitFor();
  const second = rowsOf('Pay-later lamp').first();
  await second.locator('.status').filter({hasText: 'persisted'}).waitFor({timeout: 15000});
  page.once('dialog', d => d.accept(TOKEN));
  await second.locator('button.do-pay').click();
  await second.locator('.status').filter({hasText: 'paid'}).waitFor();
  assert.equal((await api(base, 'GET', `/api/v1/items/${item.id}`)).body.paid, 1);

  // A reload: the buyer id and the list come back from the server.
  await page.reload();
  assert.equal(await page.inputValue('#buyer'), '1001');
  await rowsOf('Pay-later lamp').nth(1).waitFor();
  assert.equal(await rowsOf('Pay-later lamp').first().locator('.status').textContent(), 'paid');
  assert.equal(await rowsOf('Pay-later lamp').nth(1).locator('.status').textContent(), 'cancelled');

  // Two seconds to pay, not paid: the sweep expires the order and the unit is on sale again.
  const brief = await createItem(base, {name: 'Blink lamp', stock: 1, payment_timeout_s: 2});
  const briefCard = page.locator(`.item[data-id="${brief.id}"]`);
  await briefCard.locator('button.buy').filter({hasText: 'Buy'}).waitFor();
  await briefCard.locator('button.buy').click();
  await briefCard.locator('.remaining').filter({hasText: /^0$/}).waitFor();
  await rowsOf('Blink lamp').locator('.status').filter({hasText: 'expired'}).waitFor({timeout: 20000});
  await briefCard.locator('.remaining').filter({hasText: /^1$/}).waitFor();
  console.log('browser_pages: / an order counted down, was cancelled, one paid, one expired');
}

// "Your orders" on a phone (390 CSS px wide): every order fits the screen, Pay and Cancel on it,
// and the page does not scroll sideways (the table of five columns had been 752 px wide).
async function ordersOnPhone(context, base) {
  const item = await createItem(base, {name: 'Phone case', stock: 9, payment_timeout_s: 600});
  const page = await context.newPage();
  try {
    await page.setViewportSize({width: 390, height: 844});
    await page.goto(base + '/');
    await page.fill('#buyer', '1001');
    const card = page.locator(`.item[data-id="${item.id}"]`);
    await card.locator('button.buy').filter({hasText: 'Buy'}).waitFor();
    await card.locator('button.buy').click();
    const row = page.locator('#orders .order', {has: page.locator('.iname', {hasText: 'Phone case'})});
    await row.locator('.status').filter({hasText: 'persisted'}).waitFor({timeout: 15000});
    await row.locator('button.do-cancel').waitFor();
    const m = await page.evaluate(() => {
      const right = (node) => node.getBoundingClientRect().right;
      const rows = [...document.querySelectorAll('#orders .order')];
      return {viewport: window.innerWidth, pageWidth: document.documentElement.scrollWidth,
              table: document.getElementById('orders').getBoundingClientRect().width,
              rows: rows.length, widest: Math.max(...rows.map(right)),
              buttons: Math.max(...[...document.querySelectorAll('#orders button')]
                .filter(b => !b.hidden).map(right))};
    });
    const said = JSON.stringify(m);
    assert.ok(m.rows >= 4, `the buyer's orders are not listed: ${said}`);
    assert.ok(m.pageWidth <= m.viewport, `the page scrolls sideways: ${said}`);
    assert.ok(m.table <= m.viewport, `the orders are wider than the phone: ${said}`);
    assert.ok(m.widest <= m.viewport, `an order reaches past the screen: ${said}`);
    assert.ok(m.buttons <= m.viewport, `Pay or Cancel is off the screen: ${said}`);
    await page.screenshot({path: shot('screenshot-sale-phone.png'), fullPage: true});
    console.log('browser_pages: / on a phone:', m.rows, 'orders in', m.table, 'px of', m.viewport);
  } finally {
    await page.close();
  }
}

// A second server on the same Redis and PostgreSQL that wants buyer tokens (buyer_auth = token);
// its base URL. The tokens come from seckill-admin buyer-token, beside SERVER_BIN.
const TOKEN_SECRET = 'browser-buyer-token-secret-of-at-least-32-bytes';
async function tokenServer(port) {
  const tokenPort = await freePort();
  start(SERVER_BIN, {SECKILL_PORT: String(tokenPort), SECKILL_ADMIN_TOKEN: TOKEN,
                     SECKILL_BUYER_AUTH: 'token', SECKILL_BUYER_TOKEN_SECRET: TOKEN_SECRET},
        'server-tokens.log');
  const base = `http://127.0.0.1:${tokenPort}`;
  await waitHealthy(base);
  return base;
}

function buyerToken(user) {
  const {execFileSync} = require('node:child_process');
  return execFileSync(path.join(path.dirname(SERVER_BIN), 'seckill-admin'), ['buyer-token', user],
                      {env: {...process.env, SECKILL_BUYER_AUTH: 'token',
                             SECKILL_BUYER_TOKEN_SECRET: TOKEN_SECRET}}).toString().trim();
}

// The refusals of a missing or bad buyer token are said, and go away as soon as a good token is
// given (they had stayed on the page after the token worked).
async function buyerTokens(context, base) {
  const item = await createItem(base, {name: 'Token lamp', stock: 5});
  const page = await context.newPage();
  try {
    await page.goto(base + '/');
    await page.fill('#buyer', '3003');
    await page.locator('#buyer').press('Tab');
    const listMessage = page.locator('#order-message');
    await page.locator('#order-message.error').filter({hasText: 'buyer token is missing'}).waitFor();
    await page.click('#signin summary');
    await page.fill('#buyer-token', 'not-a-token');
    await page.locator('#buyer-token').press('Tab');
    const card = page.locator(`.item[data-id="${item.id}"]`);
    await card.locator('button.buy').filter({hasText: 'Buy'}).waitFor();
    await card.locator('button.buy').click();
    await page.locator('#message.error').filter({hasText: 'buyer token is missing'}).waitFor();
    assert.match(await listMessage.textContent(), /buyer token/);

    await page.fill('#buyer-token', buyerToken('3003'));
    await page.locator('#buyer-token').press('Tab');
    await listMessage.filter({hasText: /^$/}).waitFor({timeout: 5000});
    await page.locator('#message').filter({hasText: /^$/}).waitFor({timeout: 1000});
    await card.locator('button.buy').click();
    await page.locator('#message.ok').filter({hasText: 'Token lamp'}).waitFor();
    await page.locator('#orders .order .status').filter({hasText: 'persisted'}).waitFor({timeout: 15000});
    assert.equal(await listMessage.textContent(), '', 'no refusal is left under the orders');
    console.log('browser_pages: / a buyer token\'s refusal went away once a good token passed');
  } finally {
    await page.close();
  }
}

async function labPage(page, base, fixture) {
  await page.goto(base + '/lab');
  const rows = page.locator('#results tbody tr');
  await rows.first().waitFor();
  assert.equal(await rows.count(), fixture.strategies.length);
  assert.equal(await rows.nth(1).locator('td').first().textContent(), fixture.strategies[1].strategy);
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

// The laboratory on a phone (390 CSS px): the page does not scroll sideways, the charts stand
// one above the other, and their labels keep a readable size (a fixed drawing scaled into half
// a phone's width had made them 4 px high).
async function labOnPhone(context, base) {
  const page = await context.newPage();
  try {
    await page.setViewportSize({width: 390, height: 844});
    await page.goto(base + '/lab');
    await page.locator('#chart-oversold svg text').first().waitFor();
    const m = await page.evaluate(() => {
      const box = id => document.getElementById(id).getBoundingClientRect();
      const label = document.querySelector('#chart-rps svg text').getBoundingClientRect();
      return {pageWidth: document.documentElement.scrollWidth, viewport: window.innerWidth,
              rpsBottom: box('chart-rps').bottom, oversoldTop: box('chart-oversold').top,
              labelHeight: label.height};
    });
    assert.ok(m.pageWidth <= m.viewport, `the page scrolls sideways: ${JSON.stringify(m)}`);
    assert.ok(m.oversoldTop >= m.rpsBottom, `the charts are side by side: ${JSON.stringify(m)}`);
    assert.ok(m.labelHeight >= 10, `the charts' labels are too small: ${JSON.stringify(m)}`);
    console.log('browser_pages: /lab on a phone: labels', m.labelHeight.toFixed(1), 'px high');
  } finally {
    await page.close();
  }
}

// A server without the laboratory (lab = off, the binaries' default): /lab says it is off and
// offers nothing to run.
async function labOff(context) {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  start(SERVER_BIN, {SECKILL_PORT: String(port), SECKILL_ADMIN_TOKEN: TOKEN, SECKILL_LAB: 'off'},
        'server-lab-off.log');
  await waitHealthy(base);
  const page = await context.newPage();
  try {
    await page.goto(base + '/lab');
    const off = page.locator('#lab-off');
    await off.filter({hasText: /laboratory is off/}).waitFor();
    assert.equal(await page.isDisabled('#go'), true, 'nothing can be run');
    assert.equal(await page.locator('#results tbody tr').count(), 0);
    console.log('browser_pages: /lab with lab = off:', await off.textContent());
  } finally {
    await page.close();
  }
}

async function main() {
  helpers();
  const {chromium} = require('playwright-core');
  fs.mkdirSync(DIR, {recursive: true});
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const results = path.join(DIR, 'experiments.json');
  const fixture = labResults(results);
  start(SERVER_BIN, {SECKILL_PORT: String(port), SECKILL_ADMIN_TOKEN: TOKEN,
                     SECKILL_LAB_RESULTS: results}, 'server.log');
  start(WORKER_BIN, {SECKILL_WORKER_ID: 'browser'}, 'worker.log');
  await waitHealthy(base);

  fs.mkdirSync(SHOTS, {recursive: true});
  const profile = fs.mkdtempSync(path.join(DIR, 'chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium', headless: true,
    viewport: {width: 1280, height: 860}, timezoneId: 'UTC', locale: 'en-GB',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync']});
  try {
    const page = context.pages()[0] || await context.newPage();
    const pageErrors = [];
    page.on('pageerror', e => pageErrors.push(e.message));
    await salePage(page, base);
    await upcomingSale(page, base);
    await quantities(page, base);
    await endedAndLarge(page, base);
    await ordersToPay(page, base);
    await page.waitForTimeout(1200); // one more poll, so the screenshot shows settled stock
    await page.screenshot({path: shot('screenshot-sale.png'), fullPage: true});
    await ordersOnPhone(context, base);
    await buyerTokens(context, await tokenServer(port));
    await labPage(page, base, fixture);
    await labOnPhone(context, base);
    await labOff(context);
    assert.deepEqual(pageErrors, [], 'the pages raised no JavaScript error');
  } finally {
    await context.close();
  }
}

if (!SERVER_BIN) {
  helpers();
  console.log('browser_pages: the sale page\'s helpers passed (no server, no browser)');
  process.exit(0);
}

support.run('browser_pages', main, DIR);

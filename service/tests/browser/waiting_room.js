// waiting_room.js: the sale page's waiting room in Chromium (ctest browser_room): a buyer joins a
// room item before its start and is told the places are drawn at the start; on a room sale
// already running they join behind five others and see their place, the five ahead and the wait;
// a purchase forced without an admission is refused with the waiting room's own sentence; at the
// start the buyer is admitted, sees the time left to buy, and buys with the admission token.
// Usage: node waiting_room.js SERVER_BIN WORKER_BIN (see run.sh, SECKILL_BROWSER_TEST); with no
// arguments it checks only web/static/room.js's pure helpers, in node.
'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const support = require('./support');
const {SOURCE, freePort, waitUp, api} = support;

const TOKEN = 'browser-room-admin-token';
const BUYER = '1001';
const [SERVER_BIN, WORKER_BIN] = process.argv.slice(2);
const DIR = path.join(process.env.SECKILL_TEST_DIR || '.', 'browser-room');

const start = (bin, env, log) => support.start(DIR, bin, [], env, log);
const admin = (base, method, urlPath, body) => api(base, TOKEN, method, urlPath, body);
const rfc3339 = (ms) => new Date(ms).toISOString().replace('.000Z', 'Z');

// room.js's helpers: what a card says in each state of the buyer's line, and the refusals.
function helpers() {
  const room = require(path.join(SOURCE, 'web/static/room.js'));
  const app = require(path.join(SOURCE, 'web/static/app.js'));
  const sale = app.saleOf({state: 'upcoming', remaining: 3, starts_in_ms: 5000, ends_in_ms: 0}, 100);
  const at = (line, expiresAt, now) => room.roomShowing(line, sale, expiresAt, now, app.countdown);
  assert.deepEqual(at(null, null, 1100), {state: 'out', note: 'Waiting room: join now, places are ' +
    'drawn at the start in 0:04.', button: 'Buy', buy: false, join: true});
  assert.match(at({state: 'prequeue', place: null}, null, 1100).note, /drawn at random at the start, in 0:04/);
  assert.match(at({state: 'prequeue', place: null}, null, 6000).note, /being drawn/);
  const waiting = at({state: 'waiting', place: 5210, ahead: 4012, wait_ms: 200600}, null, 6000);
  assert.equal(waiting.note, 'Your place: 5210; 4,012 ahead of you, about 3 minutes to wait.');
  assert.equal(waiting.buy, false);
  const admitted = {state: 'admitted', place: 3, admission: 't'};
  assert.deepEqual(at(admitted, 126000, 6000), {state: 'admitted', note: 'Your turn! Buy within 2:00.',
                                                button: 'Buy', buy: true, join: false});
  assert.equal(at(admitted, 126000, 126000).state, 'expired', 'at its end the admission buys nothing');
  assert.equal(at({state: 'sold_out'}, null, 6000).button, 'Sold out');
  assert.equal(at({state: 'expired', place: 3}, null, 6000).buy, false);
  assert.equal(room.roomWait(59999), 'under a minute');
  assert.equal(room.roomWait(60000), 'about 1 minute');
  assert.equal(room.roomWait(3 * 3600000), 'about 3 hours');
  // The end of an admission on the page's clock: from the server's ms when given, else its time.
  assert.equal(room.roomExpiresAt({admission: 't', admission_expires_in_ms: 5000}, 100, 0), 5100);
  assert.equal(room.roomExpiresAt({admission: 't', admission_expires_at: '2026-11-22T20:02:00Z'}, 100,
                                  Date.parse('2026-11-22T20:00:00Z')), 120100);
  assert.equal(room.roomExpiresAt({state: 'waiting'}, 100, 0), null);
  const said = (error) => room.roomSentence(403, {error}, '7', 'Tickets');
  assert.match(said('admission_missing'), /sells through a waiting room/);
  assert.match(said('admission_expired'), /has run out/);
  assert.match(said('admission_wrong_buyer'), /another buyer's, not buyer 7's/);
  assert.match(said('admission_wrong_item'), /another item/);
  assert.match(said('admission_wrong_round'), /earlier round/);
  assert.match(said('admission_forged'), /not one the shop signed/);
  assert.equal(said('limit_reached'), null, 'the other refusals are app.js\'s');
}

async function createItem(base, fields) {
  const res = await admin(base, 'POST', '/api/v1/items', fields);
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body;
}

// Joins `user` to item's line through the API, as another buyer's page would.
async function join(base, item, user) {
  const res = await fetch(`${base}/api/v1/items/${item}/queue`, {
    method: 'POST', headers: {'Content-Type': 'application/json'},
    body: JSON.stringify({user_id: String(user)})});
  assert.ok(res.ok, `join of ${user}: ${res.status} ${await res.text()}`);
}

async function main() {
  helpers();
  fs.mkdirSync(DIR, {recursive: true});
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  start(SERVER_BIN, {SECKILL_PORT: String(port), SECKILL_ADMIN_TOKEN: TOKEN}, 'server.log');
  start(WORKER_BIN, {SECKILL_WORKER_ID: 'browser-room'}, 'worker.log');
  await waitUp(base + '/health');

  const context = await support.chromium(DIR, {timezoneId: 'UTC', locale: 'en-GB'});
  try {
    const page = context.pages()[0] || await context.newPage();
    const pageErrors = [];
    page.on('pageerror', e => pageErrors.push(e.message));
    await page.goto(base + '/');
    await page.fill('#buyer', BUYER);
    await page.locator('#buyer').dispatchEvent('change');

    // The items once the page is up (the page lists new ones within its second's poll). A room
    // sale already running, admitting nobody yet: five buyers ahead of ours.
    const running = await createItem(base, {name: 'Busy room', stock: 10, admission: 'room',
                                            starts_at: rfc3339(Math.ceil(Date.now() / 1000) * 1000 + 1000),
                                            admit_per_s: 0.001, admit_burst: 0});
    // A room sale whose start is a few seconds away: everyone who joins before is admitted at it.
    const startMs = Math.ceil(Date.now() / 1000) * 1000 + 6000;
    const drop = await createItem(base, {name: 'Room drop', stock: 3, admission: 'room',
                                         starts_at: rfc3339(startMs), admit_per_s: 1});
    assert.equal(drop.admission, 'room', JSON.stringify(drop));
    await new Promise(r => setTimeout(r, Math.max(0, Date.parse(running.starts_at) - Date.now() + 100)));
    for (let u = 2001; u <= 2005; u++) await join(base, running.id, u);

    // Before the start: Join, then "places are drawn at the start", Buy closed.
    const card = page.locator(`.item[data-id="${drop.id}"]`);
    await card.locator('.note').filter({hasText: /^Waiting room: join now/}).waitFor();
    assert.ok(await card.locator('button.buy').isDisabled(), 'no Buy before an admission');
    await card.locator('button.join').click();
    await card.locator('.note').filter({hasText: /^You are in\. Places are drawn at random at the start, in 0:0\d\.$/})
      .waitFor();
    assert.ok(await card.locator('button.join').isHidden(), 'joined: no second Join');
    await page.locator('#message.ok').filter({hasText: 'You are in the line for “Room drop”'}).waitFor();

    // The running sale: behind five late joiners, in arrival order.
    const busy = page.locator(`.item[data-id="${running.id}"]`);
    await busy.locator('button.join').click();
    await busy.locator('.note').filter({hasText: /^Your place: 6; 5 ahead of you, .* to wait\.$/}).waitFor();
    assert.equal(await busy.getAttribute('data-room'), 'waiting');
    assert.equal(await busy.locator('button.buy').textContent(), 'Waiting…');
    // A purchase forced past the closed button: the room's refusal, as a sentence.
    await busy.locator('button.buy').evaluate(b => { b.disabled = false; b.click(); });
    await page.locator('#message.error')
      .filter({hasText: '“Busy room” sells through a waiting room: join it, and buy when it is your turn.'})
      .waitFor();

    // The start: admitted, the time left to buy, then bought with the token.
    await card.locator('.note').filter({hasText: /^Your turn! Buy within 1:5\d\.$/}).waitFor({timeout: 15000});
    const admittedLate = Date.now() - startMs;
    assert.ok(admittedLate < 3000, `admitted ${admittedLate} ms after the start`);
    assert.ok(await card.locator('button.buy').isEnabled());
    await card.locator('button.buy').click();
    await page.locator('#message.ok').filter({hasText: /^Order \d+ accepted: “Room drop” is yours/}).waitFor();
    await card.locator('.remaining').filter({hasText: /^2$/}).waitFor();
    const mine = await admin(base, 'GET', `/api/v1/orders?user_id=${BUYER}`);
    assert.equal(mine.status, 200);
    const item = await admin(base, 'GET', `/api/v1/items/${drop.id}`);
    assert.equal(item.body.sold, 1, JSON.stringify(item.body));
    assert.equal((await admin(base, 'GET', `/api/v1/items/${running.id}`)).body.sold, 0,
                 'nothing sold without an admission');
    assert.deepEqual(pageErrors, [], 'the page raised no JavaScript error');
    console.log(`browser_room: joined, waited at place 6, admitted ${admittedLate} ms after the start, bought`);
  } finally {
    await context.close();
  }
}

if (SERVER_BIN) {
  support.run('browser_room', main, DIR);
} else {
  helpers();
  console.log('browser_room: the waiting room\'s helpers passed (no server, no browser)');
}

// draw.js: the draw on the sale page in Chromium (ctest browser_draw), against a real server and
// worker. Two buyers, each in a tab of their own, see a draw item's entry window count down, enter
// it when it opens (one unit in stock) and see "Entered"; a reload finds the entry again. After
// the close the admin draws from the console (the Draw button, a beacon, confirmed) and sees the
// draw's counts; one page says "You won: ... pay by", the other "On the waitlist (position 2)",
// as the entries say; the winner pays (demo) and the card says paid. On a room item and a draw
// item with proof-of-work the page solves the challenge in a Web Worker, shows the numbers tried,
// and the join or the entry goes in with the solution (one without is refused). Saves run/screenshots/screenshot-draw.png (`make screenshots`
// copies it to docs/).
// Usage: node draw.js SERVER_BIN WORKER_BIN (see run.sh, SECKILL_BROWSER_TEST=draw.js); with no
// arguments it checks only the pure helpers of web/static/draw.js, pow.js and the console's
// draw terms, in node.
'use strict';

const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');

const support = require('./support');
const {SOURCE, freePort, waitUp, api} = support;

const TOKEN = 'browser-draw-admin-token';
const [SERVER_BIN, WORKER_BIN] = process.argv.slice(2);
const DIR = path.join(process.env.SECKILL_TEST_DIR || '.', 'browser-draw');
const SHOTS = path.join(SOURCE, 'run', 'screenshots');

const start = (bin, env, log) => support.start(DIR, bin, [], env, log);
const admin = (base, method, urlPath, body) => api(base, TOKEN, method, urlPath, body);
const rfc3339 = (ms) => new Date(ms).toISOString().replace('.000Z', 'Z');
const wholeSecond = (ms) => Math.ceil(ms / 1000) * 1000;
const sha256 = (text) => crypto.createHash('sha256').update(text).digest('hex');

// pow.js's solver: the hash is SHA-256's, the number found is the one hidden, the progress moves
// up to it, a challenge without a solution in range answers null, the payload is ALTCHA's.
async function powHelpers() {
  const pow = require(path.join(SOURCE, 'web/static/pow.js'));
  assert.equal(await pow.powDigest('abc'), sha256('abc'));
  assert.equal(pow.powHex(new Uint8Array([0, 15, 255]).buffer), '000fff');
  // The page's own SHA-256 (no secure context, no Web Crypto) at every padding's edge.
  for (let n = 0; n <= 200; n++) {
    const text = n % 2 ? 'a'.repeat(n) : 'é'.repeat(n / 2); // é: two bytes of UTF-8
    const bytes = new TextEncoder().encode(text);
    assert.equal(pow.powHex(pow.powSha256(bytes)), sha256(text), `SHA-256 of ${bytes.length} bytes`);
  }
  const salt = 'expires=1795442435&item=7&user=42&r=5f2b';
  const ch = {algorithm: 'SHA-256', challenge: sha256(salt + 4321), maxnumber: 10000, salt,
              signature: 'ab'.repeat(32)};
  const seen = [];
  const number = await pow.powSolve(ch, pow.powDigest, (tried, max) => seen.push([tried, max]), 1000);
  assert.equal(number, 4321);
  assert.deepEqual(seen.map(s => s[0]), [1000, 2000, 3000, 4000, 4322], 'every 1,000 numbers, then the last');
  assert.ok(seen.every(s => s[1] === 10000));
  assert.equal(await pow.powSolve({...ch, challenge: ch.challenge.toUpperCase()}, pow.powDigest, () => {}, 1000),
               4321, 'hex in either case');
  const tooHard = {...ch, challenge: sha256(salt + 20000)};
  const last = [];
  assert.equal(await pow.powSolve(tooHard, pow.powDigest, (t) => last.push(t), 5000), null);
  assert.equal(last[last.length - 1], 10001, 'all of 0..maxnumber were tried');
  const payload = JSON.parse(Buffer.from(pow.powPayload(ch, number), 'base64').toString('utf8'));
  assert.deepEqual(payload, {algorithm: 'SHA-256', challenge: ch.challenge, number: 4321, salt,
                             signature: ch.signature});
  assert.deepEqual(Object.keys(payload), ['algorithm', 'challenge', 'number', 'salt', 'signature']);
  assert.equal(pow.powProgress(12000, 49999), 'Proof of work: 12,000 of 50,000 numbers tried (24%)');
  assert.equal(pow.powProgress(60000, 49999), 'Proof of work: 50,000 of 50,000 numbers tried (100%)');
  assert.match(pow.powSentence({error: 'pow_expired'}, 'Lamp'), /for “Lamp” took longer than its challenge lives/);
  assert.match(pow.powSentence({error: 'pow_replayed'}, 'Lamp'), /used already/);
  assert.equal(pow.powSentence({error: 'pow_wrong_buyer'}, 'Lamp'),
               'The proof of work for “Lamp” was refused (pow_wrong_buyer): please try again.');
  assert.equal(pow.powSentence({error: 'sold_out'}, 'Lamp'), null, 'the other refusals are app.js\'s');
}

// draw.js's card: the window's countdown, enter, entered, each outcome, the audit, the refusals.
function drawHelpers() {
  const d = require(path.join(SOURCE, 'web/static/draw.js'));
  const {countdown} = require(path.join(SOURCE, 'web/static/app.js'));
  const when = (iso) => `<${iso}>`;
  const item = {admission: 'draw', draw: {commitment: 'c0ffee', entries_open_at: '2026-11-22T20:00:00Z',
                                          entries_close_at: '2026-11-22T20:10:00Z', drawn_at: null,
                                          secret: null, beacon: null, entries: 0}};
  const draw = d.drawOf(item);
  // The window on the page's clock: from the server's ms when given, else against the wall clock.
  const win = d.drawWindow(draw, 100, Date.parse('2026-11-22T19:59:55Z'));
  assert.deepEqual(win, {openAt: 5100, closeAt: 605100});
  assert.deepEqual(d.drawWindow({...draw, entries_opens_in_ms: 3000, entries_closes_in_ms: 9000}, 100, 0),
                   {openAt: 3100, closeAt: 9100});
  assert.deepEqual(d.drawOf({entries_open_at: 'a', entries_close_at: 'b'}),
                   {entries_open_at: 'a', entries_close_at: 'b'}, 'the terms from the item when no draw object');
  const at = (entry, now, order, dr) => d.drawShowing(entry, dr || draw, win, order || null, now, countdown, when);
  assert.deepEqual(at(null, 1100), {state: 'upcoming', enter: false,
                                    note: 'Draw: entries open in 0:04 (<2026-11-22T20:00:00Z>).'});
  assert.deepEqual(at(null, 5100), {state: 'open', enter: true,
                                    note: 'Draw: enter before the close in 10:00; winners are drawn at random ' +
                                          'after it, speed buys nothing.'});
  assert.deepEqual(at(null, 605100), {state: 'closed', enter: false, note: 'Entries are closed; the draw is to come.'});
  const drawn = {...draw, drawn_at: '2026-11-22T20:11:00Z', secret: 'k'.repeat(64), beacon: 'drand 123'};
  assert.equal(at(null, 700000, null, drawn).note, 'The draw has been made; you did not enter it.');
  const entry = {entrant: 'e'.repeat(64), quantity: 2, position: null, outcome: null, order_id: null};
  assert.deepEqual(at(entry, 6100), {state: 'entered', enter: false,
                                     note: 'Entered: 2 units; the draw follows the close in 9:59.'});
  assert.equal(at(entry, 605100).note, 'Entered: 2 units; the draw is to come.');
  const won = {...entry, quantity: 1, position: 1, outcome: 'won', order_id: '90071992547409931'};
  assert.deepEqual(at(won, 700000, null, drawn), {state: 'won', enter: false,
                                                  note: 'You won: 1 unit. Your order is under “Your orders”.'});
  const order = {order_id: '90071992547409931', status: 'persisted', pay_by: '2026-11-22T20:16:00Z'};
  assert.equal(at(won, 700000, order, drawn).note,
               'You won: 1 unit, pay by <2026-11-22T20:16:00Z> (order 90071992547409931 under “Your orders”).');
  assert.equal(at(won, 700000, {...order, status: 'paid'}, drawn).note, 'You won: 1 unit, paid (order 90071992547409931).');
  assert.deepEqual(at(won, 700000, {...order, status: 'expired'}, drawn),
                   {state: 'lapsed', enter: false, note: 'You won, but order 90071992547409931 was expired: its ' +
                                                         'units went to the waitlist.'});
  assert.match(at({...won, outcome: 'won_from_waitlist'}, 700000, order, drawn).note, /^You won from the waitlist: 1 unit, pay by/);
  assert.deepEqual(at({...entry, position: 2, outcome: 'waitlisted'}, 700000, null, drawn),
                   {state: 'waitlisted', enter: false, note: 'On the waitlist (position 2): units that come back go ' +
                                                             'to the waitlist in the draw’s order.'});
  assert.equal(at({...entry, position: 3, outcome: 'skipped'}, 700000, null, drawn).note,
               'Not drawn: 2 units did not fit the units left at your turn; on the waitlist (position 3).');
  // The audit: the commitment before; K, the beacon, the handle, the route and the script after.
  const shop = 'https://shop.example';
  assert.deepEqual(d.drawAudit(draw, null, 7, shop), [
    ['Commitment, SHA-256(K)', 'c0ffee'], ['Secret K', 'shown after the draw'],
    ['Every entrant in ticket order', '/api/v1/items/7/draw/audit'],
    ['Check it yourself', 'scripts/draw-verify --url https://shop.example 7']]);
  const audit = Object.fromEntries(d.drawAudit(drawn, won, 7, shop));
  assert.equal(audit['Secret K'], 'k'.repeat(64));
  assert.equal(audit.Beacon, 'drand 123');
  assert.equal(audit['Your entrant handle E'], 'e'.repeat(64));
  assert.equal(audit['Check it yourself'], `scripts/draw-verify --url https://shop.example 7 --entrant ${'e'.repeat(64)}`);
  assert.equal(Object.fromEntries(d.drawAudit({...drawn, beacon: ''}, won, 7, shop)).Beacon, '(none)');
  const said = (status, body) => d.drawSentence(status, body, '7', 'Sneaker', when);
  assert.equal(said(409, {error: 'entries_not_open', entries_open_at: 'T'}), 'Entries to the draw of “Sneaker” open at <T>.');
  assert.equal(said(409, {error: 'entries_closed', entries_close_at: 'T'}),
               'Entries to the draw of “Sneaker” are closed (since <T>).');
  assert.match(said(409, {error: 'draw_item'}), /sold by a draw: enter it/);
  assert.match(said(409, {error: 'not_a_draw'}), /not sold by a draw/);
  assert.equal(said(403, {error: 'pow_expired'}), null, 'proof-of-work\'s refusals are pow.js\'s');
}

// The console's draw terms, as the server checks them, and when it offers the Draw button.
function consoleHelpers() {
  const c = require(path.join(SOURCE, 'web/static/admin.js'));
  const check = (values) => c.checkForm(c.CREATE_FIELDS, {listed: true, lab: false, ...values}, 0);
  const draw = {name: 'x', stock: '1', admission: 'draw', entries_open_at: '2030-01-01T00:00:00',
                entries_close_at: '2030-01-01T00:05:00'};
  assert.deepEqual(check(draw), {body: {name: 'x', stock: 1, admission: 'draw',
                                        entries_open_at: '2030-01-01T00:00:00Z',
                                        entries_close_at: '2030-01-01T00:05:00Z'}, errors: {}});
  assert.match(check({...draw, entries_close_at: ''}).errors.entries_close_at, /required for a draw/);
  assert.match(check({...draw, entries_open_at: ''}).errors.entries_open_at, /required for a draw/);
  assert.match(check({...draw, entries_close_at: '2030-01-01T00:00:00'}).errors.entries_close_at,
               /after entries_open_at/);
  assert.match(check({...draw, segments: '2'}).errors.segments, /one segment/);
  assert.match(check({name: 'x', stock: '1', entries_open_at: '2030-01-01T00:00:00'}).errors.entries_open_at,
               /term of a draw/);
  assert.match(check({...draw, admission: 'room', starts_at: '2030-01-01T00:00:00', admit_per_s: '1'})
    .errors.entries_close_at, /term of a draw/);
  assert.match(check({...draw, admission: 'lottery'}).errors.admission, /one of "race", "room", "draw"/);
  assert.equal(check({...draw, pow_maxnumber: '50000', pow_ttl_s: '60'}).body.pow_maxnumber, 50000);
  assert.match(check({...draw, pow_maxnumber: '999'}).errors.pow_maxnumber, /1000 to 10000000/);
  assert.match(check({...draw, pow_ttl_s: '86401'}).errors.pow_ttl_s, /1 to 86400/);
  assert.deepEqual(c.checkForm(c.DRAW_FIELDS, {beacon: ''}, 0), {body: {}, errors: {}});
  assert.deepEqual(c.checkForm(c.DRAW_FIELDS, {beacon: 'drand 4210000'}, 0).body, {beacon: 'drand 4210000'});
  assert.match(c.checkForm(c.DRAW_FIELDS, {beacon: 'b'.repeat(257)}, 0).errors.beacon, /1 to 256 bytes/);
  const view = {admission: 'draw', draw: {entries_close_at: '2030-01-01T00:05:00Z', drawn_at: null}};
  assert.equal(c.drawReady(view, 0, Date.parse('2030-01-01T00:04:59Z')), false, 'no draw while entries are open');
  assert.equal(c.drawReady(view, 0, Date.parse('2030-01-01T00:05:00Z')), true);
  assert.equal(c.drawReady({...view, draw: {...view.draw, drawn_at: 'T'}}, 0, 0), true, 'drawn: the first result again');
  assert.equal(c.drawReady({admission: 'room', room: {}}, 0, 0), false);
}

async function helpers() {
  await powHelpers();
  drawHelpers();
  consoleHelpers();
}

async function createItem(base, fields) {
  const res = await admin(base, 'POST', '/api/v1/items', fields);
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body;
}

// A tab of the sale page acting for `buyer`, recording its JavaScript errors.
async function salePage(context, base, buyer) {
  const page = await context.newPage();
  page.errors = [];
  page.on('pageerror', e => page.errors.push(e.message));
  await page.goto(base + '/');
  await page.fill('#buyer', buyer);
  await page.locator('#buyer').dispatchEvent('change');
  return page;
}

// The admin draws the item from the console: signed in, the sale watched, Draw with a beacon,
// confirmed; the console shows the draw's counts.
async function drawFromConsole(context, base, item, entries) {
  const page = await context.newPage();
  page.errors = [];
  page.on('pageerror', e => page.errors.push(e.message));
  const asked = [];
  page.on('dialog', d => { asked.push(d.message()); d.accept(); });
  try {
    await page.goto(base + '/admin');
    await page.fill('#credential', TOKEN);
    await page.click('#signin button[type=submit]');
    await page.locator('#who').filter({hasText: 'scope admin'}).waitFor();
    await page.locator(`#sales tr[data-id="${item.id}"] button.watch`).click();
    await page.locator('#figures dd[data-figure="draw_entries"]').filter({hasText: String(entries)}).waitFor();
    await page.locator('#draw').waitFor({state: 'visible', timeout: 15000});
    await page.fill('#draw-beacon', 'browser-draw beacon 42');
    await page.click('#draw button[type=submit]');
    await page.locator('#steer-message.ok').filter({hasText: /^Drawn: 1 won, 1 waitlisted, 0 skipped of 2 entries; 1 units won\.$/})
      .waitFor();
    assert.match(asked[0], /^Draw sale \d+ \(Draw lamp\) now with the beacon “browser-draw beacon 42”\?/);
    await page.locator('#figures dd[data-figure="draw_won"]').filter({hasText: /^1$/}).waitFor();
    await page.locator('#figures dd[data-figure="draw_waitlisted"]').filter({hasText: /^1$/}).waitFor();
    await page.locator('#drawn').filter({hasText: /^Drawn at .*: K [0-9a-f]{64}, beacon “browser-draw beacon 42”\.$/})
      .waitFor();
    assert.deepEqual(page.errors, [], 'the console raised no JavaScript error');
  } finally {
    await page.close();
  }
}

// Two buyers enter a one-unit draw in their tabs; the admin draws; one wins and pays, the other
// is waitlisted.
async function wonAndWaitlisted(context, base) {
  const buyers = ['3001', '3002'];
  const pages = [await salePage(context, base, buyers[0]), await salePage(context, base, buyers[1])];
  // The window after the pages are up (the page lists a new item within its second's poll).
  const openMs = wholeSecond(Date.now() + 4000), closeMs = openMs + 8000;
  const item = await createItem(base, {name: 'Draw lamp', stock: 1, admission: 'draw', payment_timeout_s: 600,
                                       entries_open_at: rfc3339(openMs), entries_close_at: rfc3339(closeMs)});
  assert.equal(item.admission, 'draw', JSON.stringify(item));
  const cardOf = (page) => page.locator(`.item[data-id="${item.id}"]`);

  // Before the window: its countdown and a closed Enter; then Enter; then "Entered".
  const first = cardOf(pages[0]);
  await first.locator('.note').filter({hasText: /^Draw: entries open in 0:0\d \(.+\)\.$/}).waitFor();
  assert.ok(await first.locator('button.enter').isDisabled(), 'no entry before the window');
  assert.ok(await first.locator('button.buy').isHidden(), 'a draw item is not bought');
  for (const page of pages) {
    const card = cardOf(page);
    await card.locator('.note').filter({hasText: /^Draw: enter before the close in 0:0\d; /}).waitFor({timeout: 10000});
    await card.locator('button.enter').click();
    await page.locator('#message.ok').filter({hasText: 'You are entered in the draw of “Draw lamp”.'}).waitFor();
    await card.locator('.note').filter({hasText: /^Entered: 1 unit; the draw follows the close in 0:0\d\.$/}).waitFor();
    assert.equal(await card.getAttribute('data-draw'), 'entered');
  }
  // A return visit finds the entry (GET entries), E in the audit.
  await pages[0].reload();
  await first.locator('.note').filter({hasText: /^Entered: 1 unit; /}).waitFor();
  const mine = await fetch(`${base}/api/v1/items/${item.id}/entries?user_id=${buyers[0]}`).then(r => r.json());
  await first.locator('.draw-audit summary').click();
  await first.locator('.draw-audit dd').filter({hasText: new RegExp(`^${mine.entry.entrant}$`)}).waitFor();
  await first.locator('.draw-audit dd').filter({hasText: new RegExp(`^scripts/draw-verify --url ${base} ${item.id} ` +
                                                                   `--entrant ${mine.entry.entrant}$`)}).waitFor();

  // The close, then the admin's draw from the console.
  await first.locator('.note').filter({hasText: /^Entered: 1 unit; the draw is to come\.$/}).waitFor({timeout: 10000});
  await drawFromConsole(context, base, item, 2);

  // Each page says what the entries say: one won, one waitlisted at position 2.
  const entries = await Promise.all(buyers.map(b => fetch(`${base}/api/v1/items/${item.id}/entries?user_id=${b}`)
    .then(r => r.json()).then(j => j.entry)));
  const winner = entries.findIndex(e => e.outcome === 'won');
  assert.ok(winner >= 0, JSON.stringify(entries));
  const loser = 1 - winner;
  assert.equal(entries[loser].outcome, 'waitlisted', JSON.stringify(entries));
  assert.equal(entries[loser].position, 2);
  const won = cardOf(pages[winner]), waiting = cardOf(pages[loser]);
  await won.locator('.note').filter({hasText: /^You won: 1 unit, pay by .+ \(order \d+ under “Your orders”\)\.$/})
    .waitFor({timeout: 15000});
  await waiting.locator('.note').filter({hasText: /^On the waitlist \(position 2\): /}).waitFor({timeout: 15000});
  assert.equal(await waiting.getAttribute('data-draw'), 'waitlisted');
  await won.locator('.draw-audit').evaluate(d => { d.open = true; }); // open already on the first page
  await won.locator('.draw-audit dd').filter({hasText: /^browser-draw beacon 42$/}).waitFor();
  await pages[winner].screenshot({path: path.join(SHOTS, 'screenshot-draw.png'), fullPage: true});

  // Pay (demo), as for any order awaiting payment: the card says paid.
  const page = pages[winner];
  const row = page.locator(`#orders .order[data-id="${entries[winner].order_id}"]`);
  await row.locator('.status').filter({hasText: 'persisted'}).waitFor();
  page.once('dialog', d => d.accept(TOKEN));
  await row.locator('button.do-pay').click();
  await row.locator('.status').filter({hasText: 'paid'}).waitFor();
  await won.locator('.note').filter({hasText: /^You won: 1 unit, paid \(order \d+\)\.$/}).waitFor({timeout: 10000});
  for (const p of pages) assert.deepEqual(p.errors, [], 'the sale page raised no JavaScript error');
  console.log(`browser_draw: two entered, buyer ${buyers[winner]} won and paid, buyer ${buyers[loser]} waitlisted`);
  return pages;
}

// Clicks `button` of `card` on an item with proof-of-work (pow_maxnumber 30,000) and waits for the
// worker's solution: every sentence the strip showed, in order (the first "0 of 30,001", then
// numbers tried as they go, the last "solved").
async function solvedBy(page, card, button) {
  await page.evaluate((id) => {
    if (window.powWatch) window.powWatch.disconnect();
    window.powSeen = [];
    window.powWatch = new MutationObserver(() => {
      const note = document.querySelector(`.item[data-id="${id}"] .pow-note`);
      const text = note ? note.textContent : '';
      if (text && text !== window.powSeen[window.powSeen.length - 1]) window.powSeen.push(text);
    });
    window.powWatch.observe(document.getElementById('items'), {subtree: true, childList: true, characterData: true});
  }, await card.getAttribute('data-id'));
  await card.locator(button).click();
  await card.locator('.pow-note').filter({hasText: /: solved\.$/}).waitFor({timeout: 30000});
  const seen = await page.evaluate(() => window.powSeen);
  assert.match(seen[0], /^Proof of work: 0 of 30,001 numbers tried \(0%\)$/, JSON.stringify(seen));
  assert.ok(seen.some(s => /^Proof of work: [1-9][\d,]* of 30,001 numbers tried \(\d+%\)$/.test(s)), JSON.stringify(seen));
  assert.match(seen[seen.length - 1], /: solved\.$/);
  assert.equal(await card.locator('.pow').getAttribute('data-state'), 'solved');
  return seen;
}

// A room item with proof-of-work: Join fetches a challenge, the page solves it with its progress
// shown, and the join goes in with the solution; one without it is refused.
async function powJoin(page, base) {
  const item = await createItem(base, {name: 'Work room', stock: 3, admission: 'room', admit_per_s: 1,
                                       starts_at: rfc3339(wholeSecond(Date.now() + 120000)), pow_maxnumber: 30000});
  assert.equal(item.pow_maxnumber, 30000, JSON.stringify(item));
  const card = page.locator(`.item[data-id="${item.id}"]`);
  await card.locator('button.join').waitFor();
  const seen = await solvedBy(page, card, 'button.join');
  await card.locator('.note').filter({hasText: /^You are in\. Places are drawn at random at the start/}).waitFor();
  const bare = await fetch(`${base}/api/v1/items/${item.id}/queue`, {method: 'POST',
    headers: {'Content-Type': 'application/json'}, body: JSON.stringify({user_id: '3999'})});
  assert.equal(bare.status, 403, 'a join without proof-of-work is refused');
  assert.equal((await bare.json()).error, 'pow_missing');
  console.log(`browser_draw: a room join's proof-of-work solved in the page (${seen.length} steps shown)`);
}

// A draw item with proof-of-work: the same before an entry, which goes in with the solution: the
// entry's "altcha" is ALTCHA's payload of the challenge the page was given, its number solving it.
async function powEntry(page, base) {
  const now = Date.now();
  const item = await createItem(base, {name: 'Work lamp', stock: 5, admission: 'draw', pow_maxnumber: 30000,
                                       entries_open_at: rfc3339(now - 1000), entries_close_at: rfc3339(now + 120000)});
  const card = page.locator(`.item[data-id="${item.id}"]`);
  await card.locator('button.enter').filter({hasText: 'Enter the draw'}).waitFor();
  const challenge = page.waitForResponse(r => r.url().includes(`/api/v1/items/${item.id}/challenge?`));
  const entry = page.waitForRequest(r => r.method() === 'POST' && r.url().endsWith(`/api/v1/items/${item.id}/entries`));
  const seen = await solvedBy(page, card, 'button.enter');
  await card.locator('.note').filter({hasText: /^Entered: 1 unit; /}).waitFor();
  const given = await (await challenge).json();
  const sent = JSON.parse((await entry).postData());
  const payload = JSON.parse(Buffer.from(sent.altcha, 'base64').toString('utf8'));
  assert.deepEqual(Object.keys(payload), ['algorithm', 'challenge', 'number', 'salt', 'signature']);
  for (const k of ['algorithm', 'challenge', 'salt', 'signature']) assert.equal(payload[k], given[k], k);
  assert.equal(sha256(payload.salt + payload.number), given.challenge, 'the number sent solves the challenge');
  const entered = await fetch(`${base}/api/v1/items/${item.id}/entries?user_id=${await page.inputValue('#buyer')}`);
  assert.equal(entered.status, 200, 'the entry with its solution is stored');
  console.log(`browser_draw: a draw entry's proof-of-work solved in the page (${seen.length} steps shown), entered`);
}

async function main() {
  await helpers();
  fs.mkdirSync(DIR, {recursive: true});
  fs.mkdirSync(SHOTS, {recursive: true});
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  start(SERVER_BIN, {SECKILL_PORT: String(port), SECKILL_ADMIN_TOKEN: TOKEN}, 'server.log');
  start(WORKER_BIN, {SECKILL_WORKER_ID: 'browser-draw'}, 'worker.log');
  await waitUp(base + '/health');

  const context = await support.chromium(DIR, {timezoneId: 'UTC', locale: 'en-GB',
                                               viewport: {width: 1100, height: 900}});
  try {
    const powPage = await salePage(context, base, '3003');
    await powJoin(powPage, base);
    const pages = await wonAndWaitlisted(context, base);
    await powEntry(powPage, base);
    pages.push(powPage);
    for (const p of pages) assert.deepEqual(p.errors, [], 'the sale page raised no JavaScript error');
  } finally {
    await context.close();
  }
}

if (SERVER_BIN) {
  support.run('browser_draw', main, DIR);
} else {
  helpers().then(() => console.log('browser_draw: the draw\'s and proof-of-work\'s helpers passed (no server, no browser)'),
                 (e) => { console.error('browser_draw: FAILED:', e); process.exit(1); });
}

// app.js: the sale page. Polls GET /api/v1/items every second and counts down
// to each sale's start by the server's clock, buys with
// POST /api/v1/items/{id}/purchase and follows each order from "queued" to
// "persisted" with GET /api/v1/orders/{id} (the message says when it is saved). An upcoming
// sale shows its start, in the buyer's time zone, beside its countdown. "Your orders" lists the buyer's
// orders (GET /api/v1/orders?user_id=) every few seconds, counts down the time
// left to pay, and pays (demo, with the admin token) or cancels them. The
// helpers up to the page's state touch no DOM: under node (the browser test)
// they are exported, not run. An item sold through a waiting room ("admission": "room") gets
// room.js's Join and the buyer's line, and buys with the admission token; one sold by a draw
// ("admission": "draw") gets draw.js's Enter, the entry and what the draw gave it.
'use strict';

const POLL_ITEMS_MS = 1000;
const POLL_ORDER_MS = 500;
const POLL_ORDERS_MS = 4000;
// sessionStorage keys: what this tab remembers across a reload.
const BUYER_KEY = 'seckill.buyer', TOKEN_KEY = 'seckill.buyer_token';
const ADMIN_KEY = 'seckill.admin_token';
const UNITS = [[1e12, 'T'], [1e9, 'B'], [1e6, 'M'], [1e3, 'k']];

const exact = n => n.toLocaleString('en-US');

// A count short enough for its card, "9,999 of 12.3k left" on one line: exact
// below 10,000, then at most three digits and a unit ("123k", "1.2M").
// Truncated, never rounded up, so a card never shows more left than there is.
function compact(n) {
  if (typeof n !== 'number') return '?';
  if (!(n >= 1e4)) return exact(n);
  const [size, unit] = UNITS.find(([s]) => n >= s);
  // Tenths by one division of integers: 2.3e6 / 1e5 is exactly 23, where
  // 2.3e6 / 1e6 * 10 would truncate 22.999999999999996 to "2.2M".
  const tenths = Math.trunc(n / (size / 10));
  return (tenths < 1000 ? String(tenths / 10) : String(Math.trunc(tenths / 10))) + unit;
}

// Time left as a clock: "0:05", "12:34", "3:04:05", "2d 3:04:05". Rounded up
// to the second, so it reads 0:00 only when the time is up.
function countdown(ms) {
  let s = Math.max(0, Math.ceil(ms / 1000));
  const d = Math.floor(s / 86400), h = Math.floor(s / 3600) % 24, m = Math.floor(s / 60) % 60;
  s %= 60;
  const clock = (d || h ? [h, m, s] : [m, s])
    .map((v, i) => (i ? String(v).padStart(2, '0') : String(v))).join(':');
  return d ? `${d}d ${clock}` : clock;
}

// When a sale starts, as the buyer's clock on the wall says it: "Sat 22 Nov,
// 20:00", seconds only when the start has some ("20:00:05"). `zone` and
// `locale` default to the browser's; the test names them.
function startTime(iso, zone, locale) {
  const at = new Date(iso);
  if (Number.isNaN(at.getTime())) return iso;
  const options = {weekday: 'short', day: 'numeric', month: 'short', hour: '2-digit',
                   minute: '2-digit', hourCycle: 'h23', timeZone: zone};
  if (at.getUTCSeconds() !== 0) options.second = '2-digit';
  return at.toLocaleString(locale, options);
}

// An item view's sale in the page's clock: "starts_in_ms" and "ends_in_ms"
// counted from `arrived`, the performance.now() at which the answer came. The
// deadlines fall late by the answer's transit, never early, and the browser's
// own wall clock, however wrong, plays no part.
function saleOf(view, arrived) {
  return {
    remaining: view.remaining,
    startAt: view.state === 'upcoming' ? arrived + view.starts_in_ms : null,
    startsAt: view.starts_at || null,
    endAt: view.state === 'ended' ? arrived : view.ends_in_ms > 0 ? arrived + view.ends_in_ms : null,
  };
}

// A sale's state at `now`, with the server's precedence: upcoming, ended,
// sold out, on sale. The deadlines move it on between two polls.
function saleState(sale, now) {
  if (sale.startAt !== null && now < sale.startAt) return 'upcoming';
  if (sale.endAt !== null && now >= sale.endAt) return 'ended';
  return sale.remaining > 0 ? 'on_sale' : 'sold_out';
}

// What a card says at `now`: its state, the line under the stock, the button.
function showing(sale, now) {
  const state = saleState(sale, now);
  switch (state) {
  case 'upcoming': {
    const when = sale.startsAt ? ` (${startTime(sale.startsAt)})` : '';
    return {state, note: `Starts in ${countdown(sale.startAt - now)}${when}`, button: 'Buy'};
  }
  case 'ended':
    return {state, note: 'The sale has ended.', button: 'Ended'};
  case 'sold_out':
    return {state, note: 'Everything is sold.', button: 'Sold out'};
  }
  const note = sale.endAt === null ? 'On sale.' : `On sale; ends in ${countdown(sale.endAt - now)}`;
  return {state, note, button: 'Buy'};
}

// Ms until what a card says next changes: the next whole second of its
// countdown (a deadline falls on one), or never.
function nextChange(sale, now) {
  const at = sale.startAt !== null && now < sale.startAt ? sale.startAt
           : sale.endAt !== null && now < sale.endAt ? sale.endAt : null;
  return at === null ? Infinity : (at - now) % 1000 || 1000;
}

// The error answers of a purchase as sentences a buyer can act on.
function sentence(status, body, buyer, item) {
  const b = body || {};
  switch (b.error) {
  case 'not_started':
    if (typeof b.starts_in_ms === 'number')
      return `“${item}” is not on sale yet: it opens in ${countdown(b.starts_in_ms)}.`;
    return `“${item}” is not on sale yet.`;
  case 'ended':
    return `The sale of “${item}” has ended.`;
  case 'sold_out':
    return `Sorry, “${item}” is sold out.`;
  case 'limit_reached': {
    const bought = b.bought, limit = b.per_buyer_limit;
    if (typeof bought !== 'number' || typeof limit !== 'number') break;
    if (limit === 1) return `Buyer ${buyer} has already bought “${item}”: one unit per buyer.`;
    if (bought >= limit)
      return `Buyer ${buyer} has already bought ${bought} of “${item}”, the most one buyer may.`;
    return `Buyer ${buyer} has already bought ${bought} of “${item}” and may buy at most ` +
           `${limit - bought} more (${limit} per buyer).`;
  }
  case 'insufficient_stock':
    if (typeof b.remaining !== 'number') break;
    return `Only ${exact(b.remaining)} of “${item}” ${b.remaining === 1 ? 'is' : 'are'} left: ` +
           'choose a smaller quantity.';
  case 'backend_unavailable':
    return 'The shop cannot reach its storage right now; please try again in a few seconds.';
  case 'not_found':
    return `“${item}” is no longer on sale.`;
  case 'in_progress':
    return `Buyer ${buyer}'s previous order of “${item}” is still being saved; ` +
           'please try again in a moment.';
  }
  if (status === 401) return 'Your buyer token is missing, malformed or expired.';
  if (status === 403) return 'Your buyer token is another buyer\'s than the buyer id.';
  if (status === 429) return 'Too many requests right now; please try again in a moment.';
  if (status === 503) return 'The shop is unavailable right now; please try again in a few seconds.';
  return b.message ? `The purchase failed: ${b.message}.` : `The purchase failed (HTTP ${status}).`;
}

// What an order's payment cell says at `now`, payAt being the page-clock
// deadline (from pay_in_ms): "awaiting" with the time left while it awaits
// payment, else what became of it.
function paying(order, payAt, now) {
  switch (order.status) {
  case 'queued':
    return {state: 'queued', note: 'being saved…'};
  case 'paid':
    return {state: 'paid', note: 'paid'};
  case 'cancelled':
    return {state: 'ended', note: order.returned ? 'units back on sale' : 'cancelled'};
  case 'expired':
    return {state: 'ended', note: 'not paid in time; units back on sale'};
  }
  if (order.pay_by === null || order.pay_by === undefined || payAt === null)
    return {state: 'final', note: 'no payment step'};
  if (now >= payAt) return {state: 'due', note: 'time to pay is up'};
  return {state: 'awaiting', note: `pay within ${countdown(payAt - now)}`};
}

// The refusals of an order's pay, cancel or read as sentences.
function orderSentence(status, body, id, action) {
  const b = body || {}, order = id ? `Order ${id}` : 'The order';
  switch (b.error) {
  case 'expired':
    return `${order} has expired: its time to pay ran out and its units are back on sale.`;
  case 'cancelled':
    return `${order} was cancelled: it can no longer be paid.`;
  case 'paid':
    return `${order} is paid: it can no longer be cancelled.`;
  case 'final':
    return `${order} has no payment step: it is final and cannot be ` +
           (action === 'pay' ? 'paid.' : 'cancelled.');
  }
  if (status === 401) return action === 'pay' ? 'The admin token is wrong: Pay (demo) asks again.'
                                              : 'Your buyer token is missing, malformed or expired.';
  if (status === 403) return 'Your buyer token is another buyer\'s than the buyer id.';
  if (status === 404) return `${order} is not one of your orders.`;
  if (status === 503)
    return 'The shop cannot reach its storage right now; please try again in a few seconds.';
  return b.message ? `That failed: ${b.message}.` : `That failed (HTTP ${status}).`;
}

// The buyer a buyer token names ("42.1795442435.sig" -> "42"), or null.
function tokenBuyer(token) {
  const m = /^([1-9][0-9]{0,15})\.[1-9][0-9]*\.[A-Za-z0-9_-]{43}$/.exec(token);
  return m ? m[1] : null;
}

// The page's state; null under node, where only the helpers above are used.
const page = typeof document === 'undefined' ? null : {
  items: document.getElementById('items'),
  buyer: document.getElementById('buyer'),
  token: document.getElementById('buyer-token'),
  message: document.getElementById('message'),
  orderMessage: document.getElementById('order-message'),
  table: document.querySelector('#orders tbody'),
  cards: new Map(), // item id -> {node, name, limit, sale, state}
  orders: new Map(), // order id -> {row, order, payAt, local, busy}
  ordersPoll: 0,     // the timer of the next order list
  ordersAsked: 0,    // order lists asked for, and the newest one applied
  ordersApplied: 0,
  listed: [],        // the ids of the newest list, in its order
  poll: 0,          // the timer of the next item list
  tick: 0,          // the timer of the next countdown second
  asked: 0,         // item lists asked for, and the newest one applied:
  applied: 0,       // an older answer would move the deadlines back
};

function say(text, kind, where) {
  const node = where || page.message;
  node.textContent = text;
  node.className = 'message ' + (kind || '');
  delete node.dataset.token;
  delete node.dataset.order;
}

// A refusal of the buyer token (401, 403), said where it happened; the next
// answer that the token passes takes it away (tokenWorked).
function sayRefused(status, text, where) {
  say(text, 'error', where);
  if (status === 401 || status === 403) (where || page.message).dataset.token = '1';
}

// The buyer token (or the lack of one) was just accepted: a refusal of it
// said earlier is no longer true.
function tokenWorked() {
  for (const node of [page.message, page.orderMessage])
    if (node.dataset.token) say('', '', node);
}

// What happened to an order, said under the orders.
function sayOrders(text, kind) {
  say(text, kind, page.orderMessage);
}

// A count in its short form, the exact number in the title.
function showCount(node, n) {
  node.textContent = compact(n);
  node.title = typeof n === 'number' ? exact(n) : '';
}

function itemCard(item) {
  const node = document.createElement('div');
  node.className = 'item';
  node.dataset.id = item.id;
  // No aria-live on the note: a screen reader would read every second of the
  // countdown. The message area says what happened to a purchase.
  node.innerHTML = '<h3></h3><div class="muted">item #<span class="id"></span>; ' +
    '<span class="limit"></span></div>' +
    '<div class="stock"><span class="remaining"></span> <small class="muted">of ' +
    '<span class="initial"></span> left</small></div>' +
    '<div class="bar"><div></div></div>' +
    '<p class="note"></p>' +
    '<div class="actions"><label class="qty">Units <input class="quantity" type="number" ' +
    'min="1" step="1" value="1"></label><button class="buy">Buy</button></div>';
  node.querySelector('h3').textContent = item.name;
  node.querySelector('.id').textContent = item.id;
  const card = {node, name: item.name};
  node.querySelector('.buy').addEventListener('click', () => buy(card));
  if (item.admission === 'room') roomCard(card); // room.js: Join, the line, the admission
  if (item.admission === 'draw') drawCard(card); // draw.js: Enter, the entry, the outcome
  return card;
}

// Brings one card to an item view; `arrived` dates the view's deadlines.
function fillCard(card, item, arrived) {
  const node = card.node;
  card.sale = saleOf(item, arrived);
  card.limit = item.per_buyer_limit || 1;
  const total = item.initial_stock + (item.restocked || 0); // units of this round
  showCount(node.querySelector('.remaining'), item.remaining);
  showCount(node.querySelector('.initial'), total);
  node.querySelector('.bar div').style.width = (total > 0 ? 100 * item.remaining / total : 0) + '%';
  node.querySelector('.limit').textContent =
    card.limit > 1 ? `up to ${card.limit} per buyer` : 'one per buyer';
  const quantity = node.querySelector('.quantity');
  node.querySelector('.qty').hidden = card.limit <= 1;
  quantity.max = card.limit;
  if (Number(quantity.value) > card.limit) quantity.value = card.limit;
  card.powMax = item.pow_maxnumber || 0; // pow.js: a challenge solved before a join or entry
  if (card.room) roomFill(card);
  if (card.draw) drawFill(card, item, arrived);
}

function showItems(items, arrived) {
  if (items.length === 0) {
    page.cards.clear();
    page.items.innerHTML = '<p class="muted">Nothing is on sale yet.</p>';
    return;
  }
  const seen = new Set();
  let previous = null;
  for (const item of items) {
    seen.add(item.id);
    let card = page.cards.get(item.id);
    if (!card) page.cards.set(item.id, card = itemCard(item));
    fillCard(card, item, arrived);
    // Keep the server's order (newest first) without rebuilding the cards.
    const node = card.node, after = previous ? previous.nextSibling : page.items.firstChild;
    if (after !== node) page.items.insertBefore(node, after);
    previous = node;
  }
  for (const [id, card] of page.cards) {
    if (!seen.has(id)) {
      card.node.remove();
      page.cards.delete(id);
    }
  }
  for (const node of [...page.items.children])
    if (!node.dataset.id) node.remove(); // "Loading the items…"
  for (const entry of page.orders.values()) nameOrder(entry);
  repaint();
}

// Paints every card as it stands now and sets the timer for the next change.
// Returns whether a card's state moved since it was last painted.
function repaint() {
  clearTimeout(page.tick);
  const now = performance.now();
  let moved = false, wait = Infinity;
  for (const card of page.cards.values()) {
    const shown = showing(card.sale, now);
    moved = moved || (card.state !== undefined && card.state !== shown.state);
    card.state = shown.state;
    card.node.dataset.state = shown.state;
    card.node.querySelector('.note').textContent = shown.note;
    const button = card.node.querySelector('.buy');
    button.textContent = shown.button;
    button.disabled = shown.state !== 'on_sale';
    card.node.querySelector('.quantity').disabled = button.disabled;
    if (card.room) roomPaint(card, now);
    if (card.draw) drawPaint(card, now);
    wait = Math.min(wait, nextChange(card.sale, now), card.room ? roomNextChange(card, now) : Infinity,
                    card.draw ? drawNextChange(card, now) : Infinity);
  }
  if (wait < Infinity) page.tick = setTimeout(tick, wait);
  return moved;
}

// A countdown's second. When a deadline opened or closed a sale, the button
// has already changed; the item list is asked for at once, for its stock.
function tick() {
  if (repaint()) refreshItems();
}

async function refreshItems() {
  clearTimeout(page.poll);
  const asked = ++page.asked;
  try {
    const res = await fetch('/api/v1/items', {cache: 'no-store'});
    const arrived = performance.now();
    const body = await res.json();
    if (res.ok && asked > page.applied) {
      page.applied = asked;
      showItems(body.items, arrived);
    } else if (res.status === 503) {
      say(sentence(503, body), 'error');
    }
  } catch (e) {
    say('The shop cannot be reached; retrying…', 'error');
  }
  // Only the newest request sets the next one: one poll at a time.
  if (asked === page.asked) page.poll = setTimeout(refreshItems, POLL_ITEMS_MS);
}

// The buyer's orders: one row each, newest first, as GET /api/v1/orders
// answers, with the orders just bought (still queued) above them.
function orderEntry(order) {
  let entry = page.orders.get(order.order_id);
  if (!entry) {
    const row = document.createElement('tr');
    row.className = 'order';
    row.dataset.id = order.order_id;
    row.innerHTML = '<td class="oid"></td><td class="iname"></td><td class="units num"></td>' +
      '<td><span class="status"></span></td><td class="pay"><span class="left"></span> ' +
      '<button class="do-pay">Pay (demo)</button> ' +
      '<button class="do-cancel quiet">Cancel</button></td>';
    row.querySelector('.oid').textContent = order.order_id;
    entry = {row, order: null, payAt: null};
    row.querySelector('.do-pay').addEventListener('click', () => settle(entry, 'pay'));
    row.querySelector('.do-cancel').addEventListener('click', () => settle(entry, 'cancel'));
    page.orders.set(order.order_id, entry);
  }
  return entry;
}

// Brings an order's row to an order view; `arrived` dates its pay_in_ms.
function fillOrder(entry, order, arrived) {
  entry.order = {...entry.order, ...order};
  entry.payAt = typeof order.pay_in_ms === 'number' ? arrived + order.pay_in_ms : entry.payAt;
  const row = entry.row, o = entry.order;
  nameOrder(entry);
  row.querySelector('.units').textContent = o.quantity;
  const status = row.querySelector('.status');
  status.textContent = o.status;
  status.className = 'status ' + o.status;
  paintOrder(entry, performance.now());
}

// An order's item by its name, once the item list has it.
function nameOrder(entry) {
  const card = page.cards.get(entry.order.item_id);
  entry.row.querySelector('.iname').textContent = card ? card.name : `item #${entry.order.item_id}`;
}

// The payment cell at `now`: the time left to pay and the buttons while the
// order awaits payment; otherwise what became of it.
function paintOrder(entry, now) {
  const shown = paying(entry.order, entry.payAt, now);
  const row = entry.row;
  row.dataset.state = shown.state;
  row.querySelector('.left').textContent = shown.note;
  for (const b of row.querySelectorAll('button')) {
    b.hidden = shown.state !== 'awaiting';
    b.disabled = shown.state !== 'awaiting' || entry.busy === true;
  }
}

// A list of the buyer's orders, newest first; `arrived` dates its pay_in_ms.
function showOrders(list, arrived) {
  for (const order of list) {
    const entry = orderEntry(order);
    entry.local = false;
    fillOrder(entry, order, arrived);
  }
  page.listed = list.map(o => o.order_id);
  placeOrders();
}

// The rows in their order: the orders bought here and not listed yet (the
// worker has not written them, or only just), then the list's.
function placeOrders() {
  const listed = new Set(page.listed), rows = [];
  for (const [id, entry] of page.orders) {
    if (entry.local && !listed.has(id)) rows.push(entry.row);
    else if (!listed.has(id)) page.orders.delete(id);
  }
  for (const id of page.listed) rows.push(page.orders.get(id).row);
  if (rows.length === 0) {
    page.table.innerHTML = '<tr class="none"><td colspan="5" class="muted">No orders yet.</td></tr>';
    return;
  }
  // Rows are moved, not rebuilt: a button keeps its focus between two polls.
  let previous = null;
  for (const row of rows) {
    const after = previous ? previous.nextSibling : page.table.firstChild;
    if (after !== row) page.table.insertBefore(row, after);
    previous = row;
  }
  while (previous.nextSibling) previous.nextSibling.remove();
}

// The buyer the page acts for: the id typed, or the buyer token's.
function buyerId() {
  return page.buyer.value.trim();
}

// The buyer token's Authorization header, when the page has one.
function buyerHeaders(extra) {
  const token = page.token.value.trim();
  return token ? {...extra, Authorization: 'Bearer ' + token} : {...extra};
}

async function refreshOrders() {
  clearTimeout(page.ordersPoll);
  const buyer = buyerId(), asked = ++page.ordersAsked;
  if (/^[1-9][0-9]{0,17}$/.test(buyer)) {
    try {
      const res = await fetch(`/api/v1/orders?user_id=${buyer}&limit=20`,
                              {cache: 'no-store', headers: buyerHeaders()});
      const arrived = performance.now();
      const body = await res.json().catch(() => null);
      // An answer for an older buyer, or older than one shown, is dropped.
      if (asked > page.ordersApplied && buyer === buyerId()) {
        page.ordersApplied = asked;
        if (res.ok && body) {
          showOrders(body.orders, arrived);
          tokenWorked();
        } else {
          sayRefused(res.status, orderSentence(res.status, body), page.orderMessage);
        }
      }
    } catch (e) { /* the next poll retries; the items' poll says the shop is unreachable */ }
  }
  if (asked === page.ordersAsked) page.ordersPoll = setTimeout(refreshOrders, POLL_ORDERS_MS);
}

// Another buyer: their orders, not the last one's.
function buyerChanged() {
  sessionStorage.setItem(BUYER_KEY, buyerId());
  page.orders.clear();
  page.ordersApplied = ++page.ordersAsked;
  showOrders([], 0);
  refreshOrders();
  for (const card of page.cards.values()) {
    if (card.room) roomFill(card);
    if (card.draw) drawAsk(card);
  }
}

function tokenChanged() {
  const token = page.token.value.trim();
  sessionStorage.setItem(TOKEN_KEY, token);
  const user = tokenBuyer(token);
  if (user && user !== buyerId()) {
    page.buyer.value = user;
    buyerChanged();
  } else {
    refreshOrders(); // whether the new token passes, at once
  }
}

// Each second: the countdowns to pay; at 0:00 the list is asked for at once
// (the worker's sweep expires the order within a second or so).
function tickOrders() {
  const now = performance.now();
  let due = false;
  for (const entry of page.orders.values()) {
    const was = entry.row.dataset.state;
    paintOrder(entry, now);
    due = due || (was === 'awaiting' && entry.row.dataset.state !== 'awaiting');
  }
  if (due) setTimeout(refreshOrders, 1200);
}

// The admin token that Pay (demo) sends: asked for once, kept in this tab.
function adminToken() {
  let token = sessionStorage.getItem(ADMIN_KEY);
  if (!token) {
    token = (prompt('Pay (demo) confirms a payment as the payment provider would, with the ' +
                    "shop's admin token (in a real shop the provider confirms payments, not " +
                    'the buyer). Admin token:') || '').trim();
    if (token) sessionStorage.setItem(ADMIN_KEY, token);
  }
  return token;
}

// Pay (demo) or Cancel, and the order as it is afterwards.
async function settle(entry, action) {
  const id = entry.row.dataset.id;
  let headers = {'Content-Type': 'application/json'}, body;
  if (action === 'pay') {
    const token = adminToken();
    if (!token) return;
    headers.Authorization = 'Bearer ' + token;
  } else {
    headers = buyerHeaders(headers);
    body = JSON.stringify({user_id: entry.order.user_id || buyerId()});
  }
  entry.busy = true;
  paintOrder(entry, performance.now());
  try {
    const res = await fetch(`/api/v1/orders/${encodeURIComponent(id)}/${action}`,
                            {method: 'POST', headers, body});
    const arrived = performance.now();
    const answer = await res.json().catch(() => null);
    if (res.ok) {
      sayOrders(`Order ${id} is ${answer.status}` +
                (answer.status === 'cancelled' ? ': its units are back on sale.' : '.'), 'ok');
    } else {
      if (action === 'pay' && res.status === 401) sessionStorage.removeItem(ADMIN_KEY);
      if (action === 'pay') sayOrders(orderSentence(res.status, answer, id, action), 'error');
      else sayRefused(res.status, orderSentence(res.status, answer, id, action), page.orderMessage);
    }
    if (answer && answer.order_id) fillOrder(entry, answer, arrived);
  } catch (e) {
    sayOrders('The shop cannot be reached; please try again.', 'error');
  }
  entry.busy = false;
  paintOrder(entry, performance.now());
  refreshOrders();
}

// The order that the message says is being saved is saved (or already paid,
// cancelled...): the message says so, unless it has moved on to something else.
function saved(id, order) {
  const node = page.message;
  if (node.dataset.order !== id) return;
  const what = node.dataset.what;
  if (order.status === 'persisted')
    say(`Order ${id} is saved: ${what}.` + (order.pay_by ? ' Pay for it under “Your orders”.' : ''), 'ok');
  else say(`Order ${id}: ${what}; it is ${order.status}.`, 'ok');
}

// Follows an order until the worker has written it to PostgreSQL. The order
// id is a string and stays one: a 64-bit id would not survive a double.
async function follow(entry) {
  const id = entry.row.dataset.id;
  try {
    const res = await fetch(`/api/v1/orders/${encodeURIComponent(id)}`,
                            {cache: 'no-store', headers: buyerHeaders()});
    const arrived = performance.now();
    if (res.ok) {
      const body = await res.json();
      if (page.orders.get(id) === entry) fillOrder(entry, body, arrived);
      if (body.status !== 'queued') {
        saved(id, body);
        return refreshOrders();
      }
    }
  } catch (e) { /* the next poll retries */ }
  if (page.orders.get(id) === entry) setTimeout(() => follow(entry), POLL_ORDER_MS);
}

// What a refusal tells about the sale, shown before the next poll: an early
// click restarts the countdown from the server's own "starts_in_ms".
function learn(card, body, arrived) {
  const sale = card.sale;
  if (body.error === 'not_started' && typeof body.starts_in_ms === 'number')
    sale.startAt = arrived + body.starts_in_ms;
  else if (body.error === 'ended') sale.endAt = arrived;
  else if (body.error === 'sold_out') sale.remaining = 0;
  else if (typeof body.remaining === 'number') sale.remaining = body.remaining;
  if (typeof body.remaining === 'number')
    showCount(card.node.querySelector('.remaining'), body.remaining);
  repaint();
}

// The buyer a purchase (or a join) acts for, the page moved on to them; null, said, when the id
// typed is no buyer's.
function actingBuyer() {
  const buyer = buyerId();
  if (!/^[1-9][0-9]{0,17}$/.test(buyer)) {
    say('Enter your buyer id (a positive whole number) first.', 'error');
    page.buyer.focus();
    return null;
  }
  if (buyer !== sessionStorage.getItem(BUYER_KEY)) buyerChanged();
  return buyer;
}

// The units chosen on a card (1 when the item allows one); null, said, when out of bounds.
function chosenQuantity(card) {
  const field = card.node.querySelector('.quantity');
  const quantity = card.limit > 1 ? Number(field.value) : 1;
  if (Number.isInteger(quantity) && quantity >= 1 && quantity <= card.limit) return quantity;
  say(`Choose from 1 to ${card.limit} units of “${card.name}”.`, 'error');
  field.focus();
  return null;
}

async function buy(card) {
  const buyer = actingBuyer();
  if (buyer === null) return;
  const quantity = chosenQuantity(card);
  if (quantity === null) return;
  let res, body, arrived;
  try {
    // The buyer id goes as a JSON string: no rounding through a double.
    res = await fetch(`/api/v1/items/${card.node.dataset.id}/purchase`, {
      method: 'POST', headers: roomHeaders(card, buyerHeaders({'Content-Type': 'application/json'})),
      body: JSON.stringify({user_id: buyer, quantity})});
    arrived = performance.now();
    body = await res.json().catch(() => null);
  } catch (e) {
    say('The shop cannot be reached; please try again.', 'error');
    return;
  }
  if (res.status !== 202) {
    // A refused admission is no refusal of the buyer token: said apart (room.js).
    const roomSaid = roomSentence(res.status, body, buyer, card.name);
    if (roomSaid) say(roomSaid, 'error');
    else sayRefused(res.status, sentence(res.status, body, buyer, card.name));
    if (card.room) roomRefused(card, body);
    if (body) learn(card, body, arrived);
    return;
  }
  const units = typeof body.quantity === 'number' ? body.quantity : quantity;
  const what = units === 1 ? `“${card.name}” is yours` : `${units} units of “${card.name}” are yours`;
  tokenWorked();
  say(`Order ${body.order_id} accepted: ${what}. It is being saved…`, 'ok');
  page.message.dataset.order = body.order_id;
  page.message.dataset.what = what;
  const entry = orderEntry(body);
  entry.local = true;
  const itemId = Number(card.node.dataset.id);
  fillOrder(entry, {order_id: body.order_id, status: 'queued', item_id: itemId, user_id: buyer,
                    quantity: units, pay_by: null}, performance.now());
  placeOrders();
  follow(entry);
  // The answer carries the stock left: show it before the next poll.
  learn(card, body, arrived);
}

if (page) {
  page.buyer.value = sessionStorage.getItem(BUYER_KEY) || '';
  page.token.value = sessionStorage.getItem(TOKEN_KEY) || '';
  if (page.token.value) page.token.closest('details').open = true;
  page.buyer.addEventListener('change', buyerChanged);
  page.token.addEventListener('change', tokenChanged);
  refreshItems();
  refreshOrders();
  setInterval(tickOrders, 1000);
} else {
  module.exports = {compact, countdown, startTime, saleOf, saleState, showing, nextChange, sentence,
                    paying, orderSentence, tokenBuyer};
}

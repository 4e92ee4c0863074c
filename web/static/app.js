// app.js: the sale page. Polls GET /api/v1/items every second, buys with
// POST /api/v1/items/{id}/purchase and follows each order from "queued" to
// "persisted" with GET /api/v1/orders/{id}.
'use strict';

const POLL_ITEMS_MS = 1000;
const POLL_ORDER_MS = 500;

const itemsBox = document.getElementById('items');
const buyerInput = document.getElementById('buyer');
const messageBox = document.getElementById('message');
const ordersBody = document.querySelector('#orders tbody');
const names = new Map(); // item id -> name, for the orders table

function say(text, kind) {
  messageBox.textContent = text;
  messageBox.className = 'message ' + (kind || '');
}

// The error answers of the API as sentences a buyer can act on.
function sentence(status, body, buyer, item) {
  const code = body && body.error;
  switch (code) {
  case 'already_purchased':
    return `Buyer ${buyer} has already bought “${item}”: one unit per buyer.`;
  case 'sold_out':
    return `Sorry, “${item}” is sold out.`;
  case 'in_progress':
    return `A purchase of buyer ${buyer} is already under way; wait a moment and try again.`;
  case 'backend_unavailable':
    return 'The shop cannot reach its storage right now; please try again in a few seconds.';
  case 'not_found':
    return `“${item}” is no longer on sale.`;
  case 'invalid_request':
    return 'Enter your buyer id as a positive whole number.';
  }
  if (status === 429) return 'Too many requests right now; please try again in a moment.';
  if (status === 503) return 'The shop is unavailable right now; please try again in a few seconds.';
  return (body && body.message) ? `The purchase failed: ${body.message}.`
                                 : `The purchase failed (HTTP ${status}).`;
}

function itemCard(item) {
  const card = document.createElement('div');
  card.className = 'item';
  card.dataset.id = item.id;
  card.innerHTML = '<h3></h3><div class="muted">item #<span class="id"></span></div>' +
    '<div class="stock"><span class="remaining"></span> <small class="muted">of ' +
    '<span class="initial"></span> left</small></div>' +
    '<div class="bar"><div></div></div>' +
    '<button class="buy">Buy</button>';
  card.querySelector('h3').textContent = item.name;
  card.querySelector('.id').textContent = item.id;
  card.querySelector('.buy').addEventListener('click', () => buy(item.id));
  return card;
}

function showItems(items) {
  if (items.length === 0) {
    itemsBox.innerHTML = '<p class="muted">Nothing is on sale yet.</p>';
    return;
  }
  const seen = new Set();
  let previous = null;
  for (const item of items) {
    names.set(item.id, item.name);
    seen.add(String(item.id));
    let card = itemsBox.querySelector(`.item[data-id="${item.id}"]`);
    if (!card) card = itemCard(item);
    // Keep the server's order (newest first) without rebuilding the cards.
    if (previous ? previous.nextSibling !== card : itemsBox.firstChild !== card)
      itemsBox.insertBefore(card, previous ? previous.nextSibling : itemsBox.firstChild);
    previous = card;
    const soldOut = item.remaining <= 0;
    card.classList.toggle('soldout', soldOut);
    card.querySelector('.remaining').textContent = item.remaining;
    card.querySelector('.initial').textContent = item.initial_stock;
    const share = item.initial_stock > 0 ? 100 * item.remaining / item.initial_stock : 0;
    card.querySelector('.bar div').style.width = share + '%';
    const button = card.querySelector('.buy');
    button.disabled = soldOut;
    button.textContent = soldOut ? 'Sold out' : 'Buy';
  }
  for (const node of [...itemsBox.children])
    if (!node.dataset.id || !seen.has(node.dataset.id)) node.remove();
}

async function refreshItems() {
  try {
    const res = await fetch('/api/v1/items', {cache: 'no-store'});
    const body = await res.json();
    if (res.ok) showItems(body.items);
    else if (res.status === 503) say(sentence(503, body), 'error');
  } catch (e) {
    say('The shop cannot be reached; retrying…', 'error');
  }
  setTimeout(refreshItems, POLL_ITEMS_MS);
}

function orderRow(order, itemName) {
  const none = ordersBody.querySelector('.none');
  if (none) none.remove();
  const row = document.createElement('tr');
  row.className = 'order';
  row.dataset.id = order.order_id;
  row.innerHTML = '<td class="oid"></td><td class="iname"></td><td class="uid"></td>' +
    '<td><span class="status queued">queued</span></td>';
  row.querySelector('.oid').textContent = order.order_id;
  row.querySelector('.iname').textContent = itemName;
  row.querySelector('.uid').textContent = order.user_id;
  ordersBody.prepend(row);
  return row;
}

// Follows an order until the worker has written it to PostgreSQL.
async function follow(orderId, row) {
  const status = row.querySelector('.status');
  try {
    const res = await fetch(`/api/v1/orders/${orderId}`, {cache: 'no-store'});
    if (res.ok) {
      const body = await res.json();
      status.textContent = body.status;
      status.className = 'status ' + body.status;
      if (body.status === 'persisted') return;
    }
  } catch (e) { /* the next poll retries */ }
  setTimeout(() => follow(orderId, row), POLL_ORDER_MS);
}

async function buy(itemId) {
  const item = names.get(itemId) || `item ${itemId}`;
  const buyer = buyerInput.value.trim();
  if (!/^[1-9][0-9]{0,17}$/.test(buyer)) {
    say('Enter your buyer id (a positive whole number) first.', 'error');
    buyerInput.focus();
    return;
  }
  let res, body;
  try {
    // The buyer id goes as text into the JSON: no rounding through a double.
    res = await fetch(`/api/v1/items/${itemId}/purchase`, {
      method: 'POST', headers: {'Content-Type': 'application/json'},
      body: `{"user_id":${buyer}}`});
    body = await res.json().catch(() => null);
  } catch (e) {
    say('The shop cannot be reached; please try again.', 'error');
    return;
  }
  if (res.status !== 202) {
    say(sentence(res.status, body, buyer, item), 'error');
    return;
  }
  say(`Order ${body.order_id} accepted: “${item}” is yours. It is being saved…`, 'ok');
  const row = orderRow({order_id: body.order_id, user_id: buyer}, item);
  follow(body.order_id, row);
  // The answer carries the stock left: show it before the next poll.
  const left = itemsBox.querySelector(`.item[data-id="${itemId}"] .remaining`);
  if (left && typeof body.remaining === 'number') left.textContent = body.remaining;
}

refreshItems();

// draw.js: the draw on the sale page, for an item sold with "admission": "draw". During the entry
// window the buyer enters once (POST /api/v1/items/{id}/entries, a quantity up to the limit;
// with the item's proof-of-work when it has one, pow.js); a return visit finds the entry
// (GET /api/v1/items/{id}/entries) and says "Entered"; after the admin's draw the card says what
// the draw gave: "You won: pay by <time>" (the order is under "Your orders", paid or cancelled
// there as any order), "On the waitlist" or "Not drawn"; and how to audit the draw (its
// commitment, K and the beacon once drawn, the audit route, scripts/draw-verify). app.js calls
// drawCard, drawFill, drawAsk, drawPaint and drawNextChange; the helpers up to drawCard touch
// no DOM and are exported under node (the browser test's helpers() checks them).
'use strict';

const drawUnits = (n) => (n === 1 ? '1 unit' : `${n} units`);

// The item's draw object (the detail's "draw"), its terms filled from the item's own members.
function drawOf(item) {
  const d = item.draw || {};
  return {...d, entries_open_at: d.entries_open_at || item.entries_open_at || null,
          entries_close_at: d.entries_close_at || item.entries_close_at || null};
}

// The entry window on the page's clock, from the view that arrived at `arrived`: from the
// server's "entries_opens_in_ms" / "entries_closes_in_ms" when the view has them (the browser's
// clock then plays no part), else from the RFC 3339 times against the browser's wall clock.
function drawWindow(draw, arrived, wallNow) {
  const at = (ms, iso) => {
    if (typeof ms === 'number') return arrived + ms;
    const t = Date.parse(iso);
    return Number.isNaN(t) ? null : arrived + (t - wallNow);
  };
  return {openAt: at(draw.entries_opens_in_ms, draw.entries_open_at),
          closeAt: at(draw.entries_closes_in_ms, draw.entries_close_at)};
}

// What a draw card says at `now`: {state, note, enter (whether Enter is open)}. entry: the buyer's
// entry (null: none, or not asked yet); draw: drawOf(item); win: drawWindow(); order: the entry's
// order as the orders list has it (null: not listed yet); when(iso): a time in the buyer's words.
function drawShowing(entry, draw, win, order, now, countdown, when) {
  const drawn = Boolean(draw.drawn_at);
  if (!entry) {
    if (win.openAt !== null && now < win.openAt)
      return {state: 'upcoming', note: `Draw: entries open in ${countdown(win.openAt - now)}` +
              (draw.entries_open_at ? ` (${when(draw.entries_open_at)}).` : '.'), enter: false};
    if (!drawn && (win.closeAt === null || now < win.closeAt))
      return {state: 'open', note: 'Draw: enter before the close' +
              (win.closeAt === null ? '' : ` in ${countdown(win.closeAt - now)}`) +
              '; winners are drawn at random after it, speed buys nothing.', enter: true};
    return {state: 'closed', note: drawn ? 'The draw has been made; you did not enter it.'
                                         : 'Entries are closed; the draw is to come.', enter: false};
  }
  const units = drawUnits(entry.quantity);
  switch (entry.outcome) {
  case 'won':
  case 'won_from_waitlist': {
    const how = entry.outcome === 'won' ? 'You won' : 'You won from the waitlist';
    if (!order) return {state: 'won', note: `${how}: ${units}. Your order is under “Your orders”.`,
                        enter: false};
    switch (order.status) {
    case 'paid':
      return {state: 'won', note: `${how}: ${units}, paid (order ${order.order_id}).`, enter: false};
    case 'cancelled':
    case 'expired':
      return {state: 'lapsed', note: `${how}, but order ${order.order_id} was ${order.status}: ` +
              'its units went to the waitlist.', enter: false};
    }
    const by = order.pay_by ? `pay by ${when(order.pay_by)}` : 'awaiting payment';
    return {state: 'won', note: `${how}: ${units}, ${by} (order ${order.order_id} under “Your ` +
            'orders”).', enter: false};
  }
  case 'waitlisted':
    return {state: 'waitlisted', note: `On the waitlist (position ${entry.position}): units that ` +
            'come back go to the waitlist in the draw’s order.', enter: false};
  case 'skipped':
    return {state: 'waitlisted', note: `Not drawn: ${units} did not fit the units left at your ` +
            `turn; on the waitlist (position ${entry.position}).`, enter: false};
  }
  const rest = win.closeAt !== null && now < win.closeAt
    ? `the draw follows the close in ${countdown(win.closeAt - now)}.` : 'the draw is to come.';
  return {state: 'entered', note: `Entered: ${units}; ${drawn ? 'the draw is being made.' : rest}`,
          enter: false};
}

// How to audit the draw, as [label, text] lines: the commitment (published when the entries
// opened), K and the beacon once drawn, the buyer's entrant handle, the audit and the script's
// command line against the shop at `origin`.
function drawAudit(draw, entry, itemId, origin) {
  const lines = [['Commitment, SHA-256(K)', draw.commitment || 'not published yet']];
  if (draw.drawn_at) {
    lines.push(['Secret K', draw.secret || '?']);
    lines.push(['Beacon', draw.beacon ? draw.beacon : '(none)']);
  } else {
    lines.push(['Secret K', 'shown after the draw']);
  }
  if (entry) lines.push(['Your entrant handle E', entry.entrant]);
  lines.push(['Every entrant in ticket order', `/api/v1/items/${itemId}/draw/audit`]);
  lines.push(['Check it yourself', `scripts/draw-verify --url ${origin} ${itemId}` +
              (entry ? ` --entrant ${entry.entrant}` : '')]);
  return lines;
}

// The refusals that the draw adds, as sentences; null for any other (pow.js's powSentence and
// app.js's sentence say those). when(iso): a time in the buyer's words.
function drawSentence(status, body, buyer, item, when) {
  const b = body || {};
  switch (b.error) {
  case 'entries_not_open':
    return `Entries to the draw of “${item}” open ` +
           (b.entries_open_at ? `at ${when(b.entries_open_at)}.` : 'later.');
  case 'entries_closed':
    return `Entries to the draw of “${item}” are closed` +
           (b.entries_close_at ? ` (since ${when(b.entries_close_at)}).` : '.');
  case 'not_a_draw':
    return `“${item}” is not sold by a draw.`;
  case 'draw_item':
    return `“${item}” is sold by a draw: enter it, winners are drawn after the close.`;
  }
  return null;
}

if (typeof document === 'undefined') {
  module.exports = {drawOf, drawWindow, drawShowing, drawAudit, drawSentence};
}

// A draw card's own parts: Enter in place of Buy, and the audit under the actions.
function drawCard(card) {
  const node = card.node;
  node.querySelector('.buy').hidden = true;
  const enter = document.createElement('button');
  enter.className = 'enter';
  enter.textContent = 'Enter the draw';
  node.querySelector('.actions').append(enter);
  const audit = document.createElement('details');
  audit.className = 'draw-audit';
  audit.innerHTML = '<summary>Audit this draw</summary><dl></dl>';
  node.append(audit);
  card.draw = {entry: null, buyer: null, asked: 0, timer: 0, item: {}, win: null, seen: ''};
  enter.addEventListener('click', () => drawEnter(card));
}

// A new item view: its draw and window; the buyer's entry is asked for once (a return visit,
// another buyer typed), and again when the draw is made or a unit comes back to the waitlist
// (the item list, polled each second, shows both: no poll of the entry of its own).
function drawFill(card, item, arrived) {
  const d = card.draw;
  d.item = drawOf(item);
  d.win = drawWindow(d.item, arrived, Date.now());
  drawAsk(card);
}

// Asks for the buyer's entry when the card does not know it for this buyer, or when the draw's
// counts moved since it was asked.
function drawAsk(card) {
  const d = card.draw, buyer = buyerId();
  const seen = [d.item.drawn_at, d.item.won_from_waitlist].join('|');
  if (d.buyer !== buyer) {
    drawForget(card);
    d.buyer = buyer;
    if (/^[1-9][0-9]{0,17}$/.test(buyer)) drawPoll(card);
  } else if (d.seen !== seen && d.entry) {
    drawPoll(card); // the entry stays shown until its new answer
  }
  d.seen = seen;
}

// The entry's order as "Your orders" lists it, or null.
function drawOrder(card) {
  const id = card.draw.entry && card.draw.entry.order_id;
  const listed = id !== null && id !== undefined ? page.orders.get(String(id)) : null;
  return listed && listed.order ? listed.order : null;
}

// Paints a draw card at `now` over what app.js's showing() painted (data-state stays the sale's;
// data-draw is the buyer's).
function drawPaint(card, now) {
  const d = card.draw, node = card.node;
  const shown = drawShowing(d.entry, d.item, d.win, drawOrder(card), now, countdown, startTime);
  node.dataset.draw = shown.state;
  node.querySelector('.note').textContent = shown.note;
  node.querySelector('.buy').hidden = true;
  const enter = node.querySelector('.enter');
  enter.hidden = shown.state !== 'open' && shown.state !== 'upcoming';
  enter.disabled = !shown.enter || d.busy === true;
  node.querySelector('.quantity').disabled = enter.disabled;
  node.querySelector('.qty').hidden = card.limit <= 1 || enter.hidden;
  const strip = node.querySelector('.pow'); // proof-of-work's bar, until the draw has spoken
  if (strip && shown.state !== 'open' && shown.state !== 'entered') strip.hidden = true;
  const rows = drawAudit(d.item, d.entry, node.dataset.id, location.origin).flatMap(([label, text]) => {
    const dt = document.createElement('dt'), dd = document.createElement('dd');
    dt.textContent = label;
    if (text.startsWith('/api/')) {
      const a = document.createElement('a');
      a.href = a.textContent = text;
      dd.append(a);
    } else {
      dd.textContent = text;
    }
    return [dt, dd];
  });
  const list = node.querySelector('.draw-audit dl');
  if (list.textContent !== rows.map(r => r.textContent).join('')) list.replaceChildren(...rows);
}

// Ms until the window's countdown shows its next second, or never.
function drawNextChange(card, now) {
  const w = card.draw.win;
  const at = w && w.openAt !== null && now < w.openAt ? w.openAt
           : w && w.closeAt !== null && now < w.closeAt ? w.closeAt : null;
  return at === null ? Infinity : (at - now) % 1000 || 1000;
}

// The card forgets the buyer's entry (another buyer; before a fresh ask).
function drawForget(card) {
  clearTimeout(card.draw.timer);
  card.draw.asked++;
  card.draw.entry = null;
  card.draw.buyer = null;
}

// Takes the buyer's entry: shows it; an order of it is looked for in "Your orders".
function drawTake(card, entry) {
  const d = card.draw, had = d.entry && d.entry.order_id;
  d.entry = entry;
  clearTimeout(d.timer);
  if (entry.order_id && entry.order_id !== had) refreshOrders();
  repaint();
}

// GET the buyer's entry; a 404 (not entered) leaves Enter.
async function drawPoll(card) {
  const buyer = buyerId(), asked = ++card.draw.asked;
  try {
    const res = await fetch(`/api/v1/items/${card.node.dataset.id}/entries?user_id=${buyer}`,
                            {cache: 'no-store', headers: buyerHeaders()});
    const body = await res.json().catch(() => null);
    if (asked !== card.draw.asked || buyer !== buyerId()) return; // a newer ask, or another buyer
    if (res.ok && body && body.entry) drawTake(card, body.entry);
    else if (res.status !== 404) card.draw.timer = setTimeout(() => drawPoll(card), 2000);
  } catch (e) {
    card.draw.timer = setTimeout(() => drawPoll(card), 2000);
  }
}

async function drawEnter(card) {
  const buyer = actingBuyer();
  if (buyer === null) return;
  const quantity = chosenQuantity(card);
  if (quantity === null) return;
  const d = card.draw;
  d.busy = true;
  repaint();
  const body = {user_id: buyer, quantity};
  if (card.powMax > 0) body.altcha = await powAltcha(card, buyer);
  let res, answer;
  if (body.altcha !== null) {
    try {
      res = await fetch(`/api/v1/items/${card.node.dataset.id}/entries`, {
        method: 'POST', headers: buyerHeaders({'Content-Type': 'application/json'}),
        body: JSON.stringify(body)});
      answer = await res.json().catch(() => null);
    } catch (e) {
      say('The shop cannot be reached; please try again.', 'error');
    }
  }
  d.busy = false;
  if (!res) return repaint();
  if (!res.ok || !answer || !answer.entry) {
    sayRefused(res.status, drawSentence(res.status, answer, buyer, card.name, startTime) ||
                           powSentence(answer, card.name) || sentence(res.status, answer, buyer, card.name));
    return repaint();
  }
  tokenWorked();
  say(answer.already_entered ? `You had already entered the draw of “${card.name}”.`
                             : `You are entered in the draw of “${card.name}”.`, 'ok');
  d.asked++;
  d.buyer = buyer;
  drawTake(card, answer.entry);
}

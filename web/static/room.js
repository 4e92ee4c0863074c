// room.js: the waiting room on the sale page, for an item sold with "admission": "room". Join
// (POST /api/v1/items/{id}/queue) from the pre-queue's opening, then the buyer's line
// (GET /api/v1/items/{id}/queue) at the server's refresh_after_ms: the draw at the start, then the
// place, the places ahead and the estimated wait; once admitted the Buy button opens, sends the
// admission token (X-Admission) and shows the time left to use it. app.js calls roomCard,
// roomFill, roomPaint, roomHeaders, roomForget and roomRefused; the helpers up to roomCard touch
// no DOM and are exported under node (the browser test's helpers() checks them).
'use strict';

// Polls never closer than this, whatever refresh_after_ms says; and a first poll this long after
// the start (plus jitter), when the draw has placed every pre-start joiner.
const ROOM_MIN_POLL_MS = 250;
const ROOM_START_JITTER_MS = 400;

// A duration in words for the estimated wait: "under a minute", "about 3 minutes", "about 2 hours".
function roomWait(ms) {
  if (typeof ms !== 'number' || ms < 60000) return 'under a minute';
  const minutes = Math.round(ms / 60000);
  if (minutes < 90) return `about ${minutes} minute${minutes === 1 ? '' : 's'}`;
  return `about ${Math.round(minutes / 60)} hours`;
}

// What a room card says at `now` (the page's clock), from the buyer's last queue answer `line`
// (null: not joined), the sale (app.js's saleOf) and expiresAt, the page-clock end of an
// admission: {state, note, button, buy (whether Buy is open), join (whether Join is shown)}.
function roomShowing(line, sale, expiresAt, now, countdown) {
  const upcoming = sale.startAt !== null && now < sale.startAt;
  if (!line) {
    const note = upcoming ? `Waiting room: join now, places are drawn at the start in ` +
                            `${countdown(sale.startAt - now)}.`
                          : 'Waiting room: join the line to buy.';
    return {state: 'out', note, button: 'Buy', buy: false, join: true};
  }
  switch (line.state) {
  case 'prequeue':
    return {state: 'prequeue', note: upcoming
      ? `You are in. Places are drawn at random at the start, in ${countdown(sale.startAt - now)}.`
      : 'You are in; your place is being drawn…', button: 'Buy', buy: false, join: false};
  case 'waiting': {
    const ahead = typeof line.ahead === 'number' ? line.ahead.toLocaleString('en-US') : '?';
    return {state: 'waiting', note: `Your place: ${line.place}; ${ahead} ahead of you, ` +
            `${roomWait(line.wait_ms)} to wait.`, button: 'Waiting…', buy: false, join: false};
  }
  case 'admitted':
    if (expiresAt !== null && now >= expiresAt)
      return {state: 'expired', note: 'Your turn to buy has run out.', button: 'Buy', buy: false,
              join: false};
    return {state: 'admitted', note: expiresAt === null ? 'Your turn! Buy now.'
            : `Your turn! Buy within ${countdown(expiresAt - now)}.`, button: 'Buy', buy: true, join: false};
  case 'expired':
    return {state: 'expired', note: 'Your turn to buy has run out.', button: 'Buy', buy: false,
            join: false};
  case 'sold_out':
    return {state: 'sold_out', note: 'Everything is sold.', button: 'Sold out', buy: false, join: false};
  case 'ended':
    return {state: 'ended', note: 'The sale has ended.', button: 'Ended', buy: false, join: false};
  }
  return {state: 'out', note: '', button: 'Buy', buy: false, join: true};
}

// The page-clock end of an admission: from admission_expires_in_ms when the answer has it, else
// from admission_expires_at against the browser's wall clock; null without an admission.
function roomExpiresAt(line, arrived, wallNow) {
  if (!line || !line.admission) return null;
  if (typeof line.admission_expires_in_ms === 'number') return arrived + line.admission_expires_in_ms;
  const at = Date.parse(line.admission_expires_at);
  return Number.isNaN(at) ? null : arrived + (at - wallNow);
}

// The refusals that the waiting room adds, as sentences; null for any other (app.js's sentence
// says those).
function roomSentence(status, body, buyer, item) {
  const b = body || {};
  switch (b.error) {
  case 'admission_missing':
    return `“${item}” sells through a waiting room: join it, and buy when it is your turn.`;
  case 'admission_forged':
    return `That admission to “${item}” is not one the shop signed; wait for your own turn.`;
  case 'admission_expired':
    return `Your turn to buy “${item}” has run out.`;
  case 'admission_wrong_buyer':
    return `That admission is another buyer's, not buyer ${buyer}'s.`;
  case 'admission_wrong_item':
    return `That admission is for another item, not “${item}”.`;
  case 'admission_wrong_round':
    return `That admission is for an earlier round of “${item}”: join its waiting room again.`;
  case 'not_open':
  case 'prequeue_not_open':
  case 'not_started':
    if (status !== 409 || !b.prequeue_opens_at) break;
    return `The waiting room of “${item}” opens at ${b.prequeue_opens_at}.`;
  }
  return null;
}

if (typeof document === 'undefined') {
  module.exports = {roomWait, roomShowing, roomExpiresAt, roomSentence};
}

// A room card's own parts, below the card's note: the Join button and the buyer's line.
function roomCard(card) {
  const node = card.node;
  const join = document.createElement('button');
  join.className = 'join';
  join.textContent = 'Join the line';
  node.querySelector('.actions').prepend(join);
  card.room = {line: null, arrived: 0, expiresAt: null, timer: 0, asked: 0, buyer: null};
  join.addEventListener('click', () => roomJoin(card));
}

// A new item view: the buyer's line is asked for once (a reload, another buyer typed) while the
// card does not know it.
function roomFill(card) {
  const buyer = buyerId();
  if (card.room.buyer !== buyer) {
    roomForget(card);
    card.room.buyer = buyer;
    if (/^[1-9][0-9]{0,17}$/.test(buyer)) roomPoll(card);
  }
}

// Paints a room card at `now` over what app.js's showing() painted (the card's data-state stays
// the sale's; data-room is the buyer's line).
function roomPaint(card, now) {
  const shown = roomShowing(card.room.line, card.sale, card.room.expiresAt, now, countdown);
  const sale = showing(card.sale, now).state;
  card.node.querySelector('.join').hidden = !shown.join || sale === 'ended' || sale === 'sold_out';
  if (sale === 'ended' || sale === 'sold_out') return; // the sale's own words stand
  const node = card.node, button = node.querySelector('.buy');
  node.dataset.room = shown.state;
  node.querySelector('.note').textContent = shown.note;
  button.textContent = shown.button;
  button.disabled = !shown.buy;
  node.querySelector('.quantity').disabled = !shown.buy;
}

// Ms until the admission's countdown shows its next second, or never.
function roomNextChange(card, now) {
  const at = card.room.expiresAt;
  return at !== null && now < at ? (at - now) % 1000 || 1000 : Infinity;
}

// The admission header of a purchase of this card, when the buyer has one.
function roomHeaders(card, headers) {
  const line = card.room && card.room.line;
  return line && line.admission ? {...headers, 'X-Admission': line.admission} : headers;
}

// The card forgets the buyer's line (another buyer; before a fresh ask).
function roomForget(card) {
  clearTimeout(card.room.timer);
  card.room.asked++;
  card.room.line = null;
  card.room.expiresAt = null;
  card.room.buyer = null;
}

// A purchase refused for its admission: the line is asked for again (the server says whether
// the buyer is still admitted).
function roomRefused(card, body) {
  if (body && typeof body.error === 'string' && body.error.startsWith('admission_')) roomPoll(card);
}

// Takes a queue answer: shows it, and sets the next poll while the buyer waits.
function roomTake(card, line, arrived) {
  const room = card.room;
  room.line = line;
  room.arrived = arrived;
  room.expiresAt = roomExpiresAt(line, arrived, Date.now());
  clearTimeout(room.timer);
  let wait = Infinity;
  if (line.state === 'prequeue' || line.state === 'waiting')
    wait = Math.max(ROOM_MIN_POLL_MS, line.refresh_after_ms || 1000);
  if (line.state === 'prequeue' && card.sale.startAt !== null)
    wait = Math.min(wait, Math.max(0, card.sale.startAt - arrived) + Math.random() * ROOM_START_JITTER_MS);
  if (wait < Infinity) room.timer = setTimeout(() => roomPoll(card), wait);
  repaint();
}

// GET the buyer's line; a 404 (not joined) leaves the Join button.
async function roomPoll(card) {
  const buyer = buyerId(), asked = ++card.room.asked;
  try {
    const res = await fetch(`/api/v1/items/${card.node.dataset.id}/queue?user_id=${buyer}`,
                            {cache: 'no-store', headers: buyerHeaders()});
    const arrived = performance.now();
    const body = await res.json().catch(() => null);
    if (asked !== card.room.asked || buyer !== buyerId()) return; // a newer ask, or another buyer
    if (res.ok && body) roomTake(card, body, arrived);
    else if (res.status !== 404) card.room.timer = setTimeout(() => roomPoll(card), 2000);
  } catch (e) {
    card.room.timer = setTimeout(() => roomPoll(card), 2000);
  }
}

async function roomJoin(card) {
  const buyer = actingBuyer();
  if (buyer === null) return;
  card.room.buyer = buyer;
  const join = {user_id: buyer};
  if (card.powMax > 0 && (join.altcha = await powAltcha(card, buyer)) === null) return; // pow.js
  let res, body;
  try {
    res = await fetch(`/api/v1/items/${card.node.dataset.id}/queue`, {
      method: 'POST', headers: buyerHeaders({'Content-Type': 'application/json'}),
      body: JSON.stringify(join)});
    body = await res.json().catch(() => null);
  } catch (e) {
    say('The shop cannot be reached; please try again.', 'error');
    return;
  }
  const arrived = performance.now();
  if (!res.ok || !body) {
    sayRefused(res.status, roomSentence(res.status, body, buyer, card.name) ||
                           powSentence(body, card.name) || sentence(res.status, body, buyer, card.name));
    return;
  }
  tokenWorked();
  say(`You are in the line for “${card.name}”.`, 'ok');
  card.room.asked++;
  roomTake(card, body, arrived);
}

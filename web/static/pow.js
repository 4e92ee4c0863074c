// pow.js: proof-of-work on the sale page, for an item with "pow_maxnumber": before a room join or
// a draw entry the page asks for a challenge (GET /api/v1/items/{id}/challenge?user_id=, ALTCHA's
// v1 shape), solves it in a Web Worker (this same file, run as one) and sends the solution as
// ALTCHA's widget does: body field "altcha", the base64 of the JSON {algorithm, challenge, number,
// salt, signature}. The solver tries the numbers 0..maxnumber until hex SHA-256(salt + number) is
// the challenge: the server checks the one number with one hash. It is our own, a few lines, so
// that the page needs no package; the helpers up to powSentence touch no DOM and are exported under
// node (the browser test's helpers() checks them). In the page, app.js and draw.js call powAltcha.
'use strict';

// Progress is reported every this many numbers: often enough for a bar that moves, rarely enough
// that the messages cost nothing next to the hashing.
const POW_PROGRESS_EVERY = 2000;

// Lower-case hex of an ArrayBuffer.
function powHex(buffer) {
  return Array.from(new Uint8Array(buffer), b => b.toString(16).padStart(2, '0')).join('');
}

// hex SHA-256 of a string's UTF-8 bytes, by the Web Crypto API (a worker's, a page's, or node's).
async function powDigest(text) {
  return powHex(await globalThis.crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)));
}

// Solves a challenge {algorithm, challenge, maxnumber, salt, signature}: the number n in
// 0..maxnumber whose hex SHA-256(salt + n) is challenge, or null when none is. digest(text) is the
// hash (powDigest); progress(tried, maxnumber) is called every `every` numbers and at the end.
async function powSolve(ch, digest, progress, every) {
  const max = ch.maxnumber, step = every || POW_PROGRESS_EVERY;
  const want = String(ch.challenge).toLowerCase();
  for (let n = 0; n <= max; n++) {
    if (await digest(ch.salt + n) === want) {
      progress(n + 1, max);
      return n;
    }
    if ((n + 1) % step === 0) progress(n + 1, max);
  }
  progress(max + 1, max);
  return null;
}

// The solution as ALTCHA's widget sends it: base64 of the JSON of the challenge's fields and the
// number found.
function powPayload(ch, number) {
  const json = JSON.stringify({algorithm: ch.algorithm, challenge: ch.challenge, number,
                               salt: ch.salt, signature: ch.signature});
  return btoa(json); // the fields are ASCII: hex, digits, and the salt's URL query
}

// The progress as a sentence: "Proof of work: 12,000 of 50,000 numbers tried (24%)".
function powProgress(tried, max) {
  const done = Math.min(tried, max + 1), all = max + 1;
  const pct = Math.floor((100 * done) / all);
  return `Proof of work: ${done.toLocaleString('en-US')} of ${all.toLocaleString('en-US')} ` +
         `numbers tried (${pct}%)`;
}

// The refusals of a solution (403 pow_*, pow.h's checks) as sentences; null for any other.
function powSentence(body, item) {
  const code = body && typeof body.error === 'string' ? body.error : '';
  if (code === 'pow_expired')
    return `The proof of work for “${item}” took longer than its challenge lives: please try again.`;
  if (code === 'pow_replayed') return `That proof of work for “${item}” was used already: please try again.`;
  if (code.startsWith('pow_')) return `The proof of work for “${item}” was refused (${code}): please try again.`;
  return null;
}

const POW_IN_WORKER = typeof importScripts === 'function' && typeof document === 'undefined';

if (POW_IN_WORKER) {
  // The worker: one challenge a message; {tried, max} as it goes, then {number} (null: none).
  self.onmessage = async (e) => {
    const number = await powSolve(e.data, powDigest, (tried, max) => self.postMessage({tried, max}));
    self.postMessage({number});
  };
} else if (typeof document === 'undefined') {
  module.exports = {POW_PROGRESS_EVERY, powHex, powDigest, powSolve, powPayload, powProgress, powSentence};
}

// The proof-of-work strip of a card: a bar and its sentence under the card's note, hidden until
// a challenge is being solved.
function powStrip(card) {
  let strip = card.node.querySelector('.pow');
  if (!strip) {
    strip = document.createElement('div');
    strip.className = 'pow';
    strip.hidden = true;
    strip.innerHTML = '<progress max="1" value="0"></progress> <span class="pow-note"></span>';
    card.node.querySelector('.actions').before(strip);
  }
  return strip;
}

// A solved challenge for `buyer` on card's item, as the body's "altcha" value; null, said in the
// page's message, when the challenge could not be had or solved. onProgress shows the numbers tried.
async function powAltcha(card, buyer) {
  const strip = powStrip(card), bar = strip.querySelector('progress');
  const note = strip.querySelector('.pow-note');
  let ch;
  try {
    const res = await fetch(`/api/v1/items/${card.node.dataset.id}/challenge?user_id=${buyer}`,
                            {cache: 'no-store', headers: buyerHeaders()});
    ch = await res.json().catch(() => null);
    if (!res.ok || !ch) {
      sayRefused(res.status, sentence(res.status, ch, buyer, card.name));
      return null;
    }
  } catch (e) {
    say('The shop cannot be reached; please try again.', 'error');
    return null;
  }
  if (typeof ch.maxnumber !== 'number') ch.maxnumber = card.powMax;
  strip.hidden = false;
  strip.dataset.state = 'solving';
  const shown = (tried, max) => {
    bar.max = max + 1;
    bar.value = Math.min(tried, max + 1);
    note.textContent = powProgress(tried, max);
  };
  shown(0, ch.maxnumber);
  const number = await new Promise((resolve) => {
    const worker = new Worker('/static/pow.js');
    worker.onmessage = (e) => {
      if (typeof e.data.tried === 'number') shown(e.data.tried, e.data.max);
      if ('number' in e.data) {
        worker.terminate();
        resolve(e.data.number);
      }
    };
    worker.onerror = () => { worker.terminate(); resolve(null); };
    worker.postMessage(ch);
  });
  strip.dataset.state = number === null ? 'failed' : 'solved';
  if (number === null) {
    say(`The proof of work for “${card.name}” found no solution; please try again.`, 'error');
    return null;
  }
  note.textContent += ': solved.';
  return powPayload(ch, number);
}

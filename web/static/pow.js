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

// SHA-256's round constants (FIPS 180-4, 4.2.2).
const POW_K = [
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2];

// SHA-256 in JavaScript, for a page served over plain HTTP from a host other than localhost: the
// Web Crypto API exists only in a secure context. Returns the digest's ArrayBuffer.
function powSha256(bytes) {
  const n = bytes.length, blocks = Math.ceil((n + 9) / 64), m = new Uint8Array(blocks * 64);
  m.set(bytes);
  m[n] = 0x80;
  const view = new DataView(m.buffer);
  view.setUint32(m.length - 8, Math.floor(n / 0x20000000));
  view.setUint32(m.length - 4, (n * 8) >>> 0);
  const h = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab,
             0x5be0cd19];
  const w = new Uint32Array(64), rotr = (x, r) => (x >>> r) | (x << (32 - r));
  for (let b = 0; b < blocks; b++) {
    for (let i = 0; i < 16; i++) w[i] = view.getUint32(b * 64 + i * 4);
    for (let i = 16; i < 64; i++) {
      const s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >>> 3);
      const s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >>> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    let [a, bb, c, d, e, f, g, hh] = h;
    for (let i = 0; i < 64; i++) {
      const t1 = hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + POW_K[i] + w[i];
      const t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & bb) ^ (a & c) ^ (bb & c));
      hh = g; g = f; f = e; e = (d + t1) >>> 0; d = c; c = bb; bb = a; a = (t1 + t2) >>> 0;
    }
    [a, bb, c, d, e, f, g, hh].forEach((v, i) => { h[i] = (h[i] + v) >>> 0; });
  }
  const out = new DataView(new ArrayBuffer(32));
  h.forEach((v, i) => out.setUint32(i * 4, v));
  return out.buffer;
}

// hex SHA-256 of a string's UTF-8 bytes, by the Web Crypto API (a worker's, a page's, or node's);
// by powSha256 where there is none (a page that is no secure context).
async function powDigest(text) {
  const bytes = new TextEncoder().encode(text), subtle = globalThis.crypto && globalThis.crypto.subtle;
  return powHex(subtle ? await subtle.digest('SHA-256', bytes) : powSha256(bytes));
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
    let number = null; // null: none found, or the solver failed (the page says so)
    try {
      number = await powSolve(e.data, powDigest, (tried, max) => self.postMessage({tried, max}));
    } catch (err) { /* number stays null */ }
    self.postMessage({number});
  };
} else if (typeof document === 'undefined') {
  module.exports = {POW_PROGRESS_EVERY, powHex, powSha256, powDigest, powSolve, powPayload, powProgress, powSentence};
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

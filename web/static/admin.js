// admin.js: the operator's console (/admin). It asks for a credential once and keeps it in
// sessionStorage (this tab only); without one it asks for nothing. It learns the credential's
// scopes from the API's own answers (GET /metrics, and a 400 or a 403 to calls that change
// nothing), lists the sales, creates one, watches one live at one request a second, restocks,
// resets and archives it, and finds, cancels and pays orders. Every call is one the API
// documents (docs/openapi.yaml). The pure helpers at the top are exported under node for the
// browser test.
'use strict';

// ---- pure helpers ----

const STOCK_MAX = 1e12;
const ID_MAX = 9007199254740991; // 2^53 - 1
const SEGMENTED_ID_LIMIT = 2 ** 40;

// A form's fields, one line each: key (the API's member), label, kind (text, int, time, bool),
// bounds, whether required, a hint. The page builds the inputs from these and checks them as
// json_io.c does; a new member of the API is one more line.
const CREATE_FIELDS = [
  {key: 'name', label: 'Name', kind: 'text', required: true, maxBytes: 200},
  {key: 'stock', label: 'Stock (units)', kind: 'int', min: 0, max: STOCK_MAX, required: true},
  {key: 'starts_at', label: 'Opens at (UTC)', kind: 'time', hint: 'empty: open at once'},
  {key: 'ends_at', label: 'Closes at (UTC)', kind: 'time', hint: 'empty: no end'},
  {key: 'per_buyer_limit', label: 'Units per buyer', kind: 'int', min: 1, max: 1000, hint: 'empty: 1'},
  {key: 'payment_timeout_s', label: 'Time to pay (s)', kind: 'int', min: 0, max: 604800,
   hint: "empty: the server's default; 0: no payment step"},
  {key: 'segments', label: 'Segments', kind: 'int', min: 1, max: 64, hint: 'Redis Cluster masters; empty: 1'},
  {key: 'id', label: 'Item id', kind: 'int', min: 1, max: ID_MAX, hint: 'empty: the next one'},
  {key: 'listed', label: 'Listed on the sale page', kind: 'bool', initial: true},
  {key: 'lab', label: "The laboratory's item (experiments only)", kind: 'bool', initial: false},
  // The waiting room's terms (docs/FAIRNESS.md; room_terms.c): named with "admission": "room" only.
  {key: 'admission', label: 'Admission', kind: 'choice', options: ['race', 'room', 'draw'], initial: 'race',
   hint: 'race: first come; room: a waiting room with a shuffled line; draw: entries, then a lottery'},
  {key: 'prequeue_opens_at', label: 'Line opens at (UTC)', kind: 'time', room: true,
   hint: 'room: before the opening; empty: at the opening'},
  {key: 'admit_per_s', label: 'Places admitted a second', kind: 'rate', max: 1e9, room: true},
  {key: 'admit_burst', label: 'Places admitted at the opening', kind: 'int', min: 0, max: STOCK_MAX,
   room: true, hint: 'empty: the stock'},
  {key: 'max_active', label: 'Most admissions at once', kind: 'int', min: 1, max: STOCK_MAX, room: true,
   hint: 'empty: no bound'},
  {key: 'admission_ttl_s', label: 'An admission lasts (s)', kind: 'int', min: 1, max: 86400, room: true,
   hint: 'empty: 120'},
  // The draw's terms (issue 28; draw-contract): named with "admission": "draw" only.
  {key: 'entries_open_at', label: 'Entries open at (UTC)', kind: 'time', draw: true,
   hint: 'draw: the commitment is published then'},
  {key: 'entries_close_at', label: 'Entries close at (UTC)', kind: 'time', draw: true,
   hint: 'draw: the Draw button comes after it'},
  // Proof-of-work on joining a room or entering a draw (sql/014_pow.sql's bounds).
  {key: 'pow_maxnumber', label: 'Proof-of-work difficulty', kind: 'int', min: 1000, max: 10000000,
   hint: 'the largest secret number; a buyer tries half on average; empty: no work'},
  {key: 'pow_ttl_s', label: 'A challenge lasts (s)', kind: 'int', min: 1, max: 86400, hint: 'empty: 300'},
];
const DRAW_TERMS = CREATE_FIELDS.filter(f => f.draw).map(f => f.key);
const ROOM_TERMS = CREATE_FIELDS.filter(f => f.room).map(f => f.key);
const RESET_FIELDS = [
  {key: 'stock', label: 'Stock of the new round', kind: 'int', min: 0, max: STOCK_MAX, required: true},
  {key: 'starts_at', label: 'Opens at (UTC)', kind: 'time', clearable: true, hint: "empty: the item's is kept"},
  {key: 'ends_at', label: 'Closes at (UTC)', kind: 'time', clearable: true, hint: "empty: the item's is kept"},
  {key: 'per_buyer_limit', label: 'Units per buyer', kind: 'int', min: 1, max: 1000,
   hint: "empty: the item's is kept"},
];
// The draw's one input: a public random value that did not exist when the entries closed.
const DRAW_FIELDS = [
  {key: 'beacon', label: 'Beacon (optional)', kind: 'text', maxBytes: 256,
   hint: "a drand round's randomness, a lottery's result; empty: none"},
];
const RESTOCK_FIELDS = [
  {key: 'add', label: 'Units to add', kind: 'int', min: 1, max: STOCK_MAX, required: true},
];

const utf8Bytes = (s) => new TextEncoder().encode(s).length;

// "2026-11-22T20:00:05" (a datetime-local input's value, read as UTC) -> "2026-11-22T20:00:05Z";
// null when it is no time or outside the years the server takes (rfc3339.c: 1970 to 9999).
function rfc3339Of(local) {
  const m = /^(\d{4}-\d\d-\d\dT\d\d:\d\d)(:\d\d)?(\.\d+)?$/.exec(local);
  if (!m || Number(m[1].slice(0, 4)) < 1970) return null;
  const iso = m[1] + (m[2] || ':00') + 'Z';
  const t = Date.parse(iso); // a round trip refuses what Date rolls over (February 30th)
  return !Number.isNaN(t) && new Date(t).toISOString().slice(0, 19) === iso.slice(0, 19) ? iso : null;
}

// One field's text -> [value, error]: value undefined when empty (the member is left out), null
// when a clearable bound is cleared (the API's null: no bound).
function fieldValue(f, raw) {
  if (f.kind === 'bool') return [Boolean(raw), null];
  if (raw === null && f.clearable) return [null, null];
  const text = String(raw === undefined || raw === null ? '' : raw).trim();
  if (text === '') return [undefined, f.required ? `${f.key} is required` : null];
  if (f.kind === 'text') {
    const n = utf8Bytes(text);
    return n >= 1 && n <= f.maxBytes ? [text, null]
      : [undefined, `${f.key} must be a string of 1 to ${f.maxBytes} bytes`];
  }
  if (f.kind === 'choice') {
    return f.options.includes(text) ? [text, null]
      : [undefined, `${f.key} must be one of ${f.options.map(o => `"${o}"`).join(', ')}`];
  }
  if (f.kind === 'rate') {
    const v = /^([0-9]+(\.[0-9]+)?|\.[0-9]+)$/.test(text) ? Number(text) : NaN;
    return v > 0 && v <= f.max ? [v, null]
      : [undefined, `${f.key} must be a number above 0, at most 10^9`];
  }
  if (f.kind === 'time') {
    const iso = rfc3339Of(text);
    return iso ? [iso, null] : [undefined, `${f.key} must be a time (2026-11-22T20:00:00)`];
  }
  const bound = f.max === STOCK_MAX ? '10^12' : f.max === ID_MAX ? '2^53-1' : String(f.max);
  const why = `${f.key} must be an integer from ${f.min} to ${bound}`;
  if (!/^(0|[1-9][0-9]*)$/.test(text)) return [undefined, why];
  const v = Number(text);
  return v >= f.min && v <= f.max ? [v, null] : [undefined, why];
}

// A form's values ({key: raw}) -> {body, errors: {key: sentence}}, checked as the server checks
// them (json_io.c's item_spec_members, parse_terms, json_io_window_ahead); nowMs: this clock.
function checkForm(fields, values, nowMs) {
  const body = {}, errors = {};
  for (const f of fields) {
    const [v, why] = fieldValue(f, values[f.key]);
    if (why) errors[f.key] = why;
    else if (v !== undefined) body[f.key] = v;
  }
  // A bound left out or cleared is not compared (a reset keeps the item's: the server judges).
  const starts = body.starts_at && Date.parse(body.starts_at);
  const ends = body.ends_at && Date.parse(body.ends_at);
  if (!errors.ends_at && ends && starts && ends <= starts) errors.ends_at = 'ends_at must come after starts_at';
  else if (!errors.ends_at && ends && ends <= nowMs) errors.ends_at = 'ends_at is in the past: the sale would never be open';
  if (!errors.segments && body.segments > 1 && body.id >= SEGMENTED_ID_LIMIT)
    errors.segments = 'an item of several segments must have an id below 2^40';
  else if (!errors.segments && body.segments > 1 && body.lab)
    errors.segments = 'a laboratory item is not split into segments';
  if (body.admission === 'room') {
    if (!body.starts_at && !errors.starts_at) errors.starts_at = 'a room needs starts_at: the moment the line is shuffled';
    if (body.admit_per_s === undefined && !errors.admit_per_s) errors.admit_per_s = 'admit_per_s is required for a room';
    const pq = body.prequeue_opens_at && Date.parse(body.prequeue_opens_at);
    if (!errors.prequeue_opens_at && pq && starts && pq >= starts)
      errors.prequeue_opens_at = 'prequeue_opens_at must come before starts_at';
  } else {
    for (const key of ROOM_TERMS)
      if (body[key] !== undefined && !errors[key]) errors[key] = `${key} is a term of a room: choose Admission "room"`;
  }
  checkDraw(body, errors);
  if (body.admission === 'race') delete body.admission;
  if (body.lab === false) delete body.lab;     // the defaults, not sent
  if (body.listed === true) delete body.listed;
  return {body, errors};
}

// The draw's terms of a create form, as the server judges them: both times, open before close,
// one segment; a draw's term on another admission is refused.
function checkDraw(body, errors) {
  if (body.admission !== 'draw') {
    for (const key of DRAW_TERMS)
      if (body[key] !== undefined && !errors[key]) errors[key] = `${key} is a term of a draw: choose Admission "draw"`;
    return;
  }
  for (const key of DRAW_TERMS)
    if (body[key] === undefined && !errors[key]) errors[key] = `${key} is required for a draw`;
  const open = body.entries_open_at && Date.parse(body.entries_open_at);
  const close = body.entries_close_at && Date.parse(body.entries_close_at);
  if (!errors.entries_close_at && open && close && close <= open)
    errors.entries_close_at = 'entries_close_at must come after entries_open_at';
  if (!errors.segments && body.segments > 1) errors.segments = 'a draw item has one segment';
}

// Whether the watched view (read at `at`, seen at `now` on this clock) is a draw whose entries
// are closed or that is drawn: then the console offers the Draw button (a second draw answers
// the first result).
function drawReady(view, at, now) {
  if (!view || view.admission !== 'draw') return false;
  const d = view.draw || {};
  if (d.drawn_at) return true;
  const close = Date.parse(d.entries_close_at || view.entries_close_at);
  return !Number.isNaN(close) && close <= now;
}

// The field a server's 400 message names: the key that comes first in it as a word, or null.
function fieldOfMessage(fields, message) {
  let best = null, at = Infinity;
  for (const f of fields) {
    const m = new RegExp(`(^|[^a-z_])${f.key}($|[^a-z_])`).exec(message || '');
    if (m && m.index < at) { best = f.key; at = m.index; }
  }
  return best;
}

function countdown(ms) {
  let s = Math.max(0, Math.ceil(ms / 1000));
  const d = Math.floor(s / 86400), h = Math.floor(s / 3600) % 24, m = Math.floor(s / 60) % 60;
  s %= 60;
  const clock = (d || h ? [h, m, s] : [m, s]).map((v, i) => (i ? String(v).padStart(2, '0') : String(v))).join(':');
  return d ? `${d}d ${clock}` : clock;
}

// A view received at `at` (this clock) as seen at `now`: its state and the countdown's words.
function liveState(view, at, now) {
  const gone = now - at;
  if (view.archived) return {state: 'archived', note: ''};
  if (view.state === 'upcoming' && view.starts_in_ms - gone > 0)
    return {state: 'upcoming', note: 'opens in ' + countdown(view.starts_in_ms - gone)};
  const endsIn = view.ends_in_ms - gone;
  if (view.ends_at && endsIn <= 0) return {state: 'ended', note: 'closed'};
  const state = view.state === 'upcoming' ? (view.remaining > 0 ? 'on_sale' : 'sold_out') : view.state;
  return {state, note: view.ends_at && state !== 'ended' ? 'closes in ' + countdown(endsIn) : ''};
}

// Refusals of the Prometheus text (seckill_purchases_total by outcome), the variants answered
// from memory counted with their reason: {reason: count}.
const REFUSAL_OF = {sold_out_flag: 'sold_out', not_started_memory: 'not_started', ended_memory: 'ended'};
function refusalsOf(text) {
  const out = {};
  const re = /^seckill_purchases_total\{outcome="([a-z_]+)"\} (\d+)/gm;
  for (let m; (m = re.exec(text));) {
    if (m[1] === 'queued') continue;
    const reason = REFUSAL_OF[m[1]] || m[1];
    out[reason] = (out[reason] || 0) + Number(m[2]);
  }
  return out;
}
const gaugeOf = (text, name) => {
  const m = new RegExp(`^${name} (-?\\d+)`, 'm').exec(text);
  return m ? Number(m[1]) : null;
};

// Rates a second between successive samples [{t, v}] -> [{t, rate}].
function rates(samples) {
  const out = [];
  for (let i = 1; i < samples.length; i++) {
    const dt = (samples[i].t - samples[i - 1].t) / 1000;
    if (dt > 0) out.push({t: samples[i].t, rate: Math.max(0, samples[i].v - samples[i - 1].v) / dt});
  }
  return out;
}

// An SVG of series {name: [{t, rate}]} over the `span` ms before `now`: one polyline each.
const COLOURS = ['#d9342b', '#2f6fdb', '#b7791f', '#1f8a4c', '#7a4fd1', '#677089', '#c2185b', '#00838f'];
function chartSvg(series, now, span) {
  const W = 600, H = 150, L = 34, B = 18;
  const names = Object.keys(series);
  const top = Math.max(1, ...names.flatMap(n => series[n].map(p => p.rate)));
  const x = (t) => L + ((t - (now - span)) / span) * (W - L - 4);
  const y = (r) => (H - B) - (r / top) * (H - B - 6);
  const lines = names.map((n, i) => {
    const pts = series[n].filter(p => p.t >= now - span).map(p => `${x(p.t).toFixed(1)},${y(p.rate).toFixed(1)}`);
    return `<polyline fill="none" stroke-width="2" stroke="${COLOURS[i % COLOURS.length]}" points="${pts.join(' ')}"/>`;
  });
  const esc = (s) => String(s).replace(/[&<>"]/g, c => `&#${c.charCodeAt(0)};`);
  const legend = names.map((n, i) =>
    `<text x="${L + 6 + i * 110}" y="12" fill="${COLOURS[i % COLOURS.length]}" font-size="11">${esc(n)}</text>`);
  return `<svg viewBox="0 0 ${W} ${H}" width="100%" preserveAspectRatio="none" aria-hidden="true">` +
    `<line x1="${L}" y1="${H - B}" x2="${W}" y2="${H - B}" stroke="#c5cbd8"/>` +
    `<text x="2" y="16" font-size="11" fill="#677089">${esc(Math.round(top))}/s</text>` +
    `<text x="2" y="${H - B}" font-size="11" fill="#677089">0</text>` +
    `<text x="${L}" y="${H - 3}" font-size="11" fill="#677089">-${Math.round(span / 60000)} min</text>` +
    `<text x="${W - 30}" y="${H - 3}" font-size="11" fill="#677089">now</text>` +
    lines.join('') + legend.join('') + '</svg>';
}

// ---- the page ----

function page() {
  const $ = (id) => document.getElementById(id);
  const KEY = 'seckill.console.credential';
  const SPAN = 5 * 60 * 1000;
  // An order id no server makes before 2095 (its 41 bits of milliseconds all set): paying it
  // tells a payments credential (404) from a narrower one (403) without touching an order.
  const NO_ORDER = '9223372036854775807';
  let token = null, scopes = new Set(), tick = 0;
  // The sale watched: {id, view, at (when it came), since, sold: [{t, v}], persisted: [...],
  // refusals: {reason: [{t, v}]}, pending}.
  let watching = null;
  let paging = null;   // {item, status, round, after, pages: [after...]}

  const say = (el, text, ok) => {
    el.textContent = text;
    el.className = 'message ' + (ok === undefined ? '' : ok ? 'ok' : 'error');
  };

  // One call with the credential: {status, body} (body: JSON, text for /metrics, or null).
  async function call(method, path, body) {
    const headers = {Authorization: 'Bearer ' + token};
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    try {
      const res = await fetch(path, {method, headers, body: body === undefined ? undefined : JSON.stringify(body)});
      const text = await res.text();
      let parsed = text;
      try { parsed = JSON.parse(text); } catch (e) { /* the metrics' text */ }
      return {status: res.status, body: parsed};
    } catch (e) {
      return {status: 0, body: {message: 'the server did not answer'}};
    }
  }
  const messageOf = (res) => (res.body && res.body.message) || `HTTP ${res.status}`;

  // The credential's scopes, from the API's answers: GET /metrics (any scope), POST
  // /api/v1/items with an empty object (400 for admin, 403 for another scope: nothing is
  // made), and a payment of an order that cannot exist (404 for payments, 403 otherwise).
  async function learnScopes() {
    const metrics = await call('GET', '/metrics');
    if (metrics.status !== 200) return {error: metrics.status === 401 ? 'not a credential of this shop' : messageOf(metrics)};
    const found = new Set(['orders:read']);
    // A create no server can accept (no name, a stock below 0): 400 for admin, 403 for the others;
    // it can never make a sale, whatever a later server takes as a default.
    if ((await call('POST', '/api/v1/items', {stock: -1})).status === 400) found.add('admin').add('payments');
    else if ((await call('POST', `/api/v1/orders/${NO_ORDER}/pay`)).status === 404) found.add('payments');
    return {scopes: found};
  }

  async function signIn(candidate) {
    token = candidate;
    const got = await learnScopes();
    if (got.error) {
      token = null;
      sessionStorage.removeItem(KEY);
      say($('signin-message'), 'Refused: ' + got.error + '.', false);
      return;
    }
    scopes = got.scopes;
    sessionStorage.setItem(KEY, token);
    $('credential').value = '';
    $('signin').hidden = true;
    $('console').hidden = false;
    const main = scopes.has('admin') ? 'admin' : scopes.has('payments') ? 'payments' : 'orders:read';
    $('who').textContent = `Signed in with a credential of scope ${main}` +
      (main === 'admin' ? '.' : ': sales can be watched, not changed.');
    document.querySelectorAll('[data-needs]').forEach(el => { el.hidden = !scopes.has(el.dataset.needs); });
    await loadSales();
    setInterval(onTick, 1000); // until the tab closes or signs out (a reload)
  }

  function signOut() {
    sessionStorage.removeItem(KEY);
    location.reload();
  }

  // ---- forms built from the field tables ----

  function buildForm(form, prefix, fields, submitLabel) {
    for (const f of fields) {
      const id = `${prefix}-${f.key}`;
      const row = document.createElement('div');
      row.className = 'field' + (f.kind === 'bool' ? ' check' : '');
      const input = document.createElement(f.kind === 'choice' ? 'select' : 'input');
      if (f.kind === 'choice')
        input.append(...f.options.map(o => Object.assign(document.createElement('option'), {value: o, textContent: o})));
      input.id = id;
      input.name = f.key;
      input.autocomplete = 'off';
      if (f.kind === 'bool') { input.type = 'checkbox'; input.checked = f.initial; }
      else if (f.kind === 'choice') input.value = f.initial;
      else if (f.kind === 'time') { input.type = 'datetime-local'; input.step = '1'; }
      else if (f.kind !== 'choice') {
        input.type = 'text';
        if (f.kind === 'int') input.inputMode = 'numeric';
        if (f.kind === 'rate') input.inputMode = 'decimal';
      }
      if (f.required) input.required = true;
      const label = document.createElement('label');
      label.htmlFor = id;
      label.textContent = f.label;
      const error = document.createElement('span');
      error.className = 'field-error';
      error.id = id + '-error';
      input.setAttribute('aria-describedby', error.id + (f.hint ? ` ${id}-hint` : ''));
      if (f.kind === 'bool') row.append(input, label); else row.append(label, input);
      if (f.clearable) { // the API's null: the bound is removed, not kept
        const none = document.createElement('label');
        none.className = 'clear';
        none.innerHTML = `<input type="checkbox" name="${f.key}-none" aria-label="${f.label}: no bound"> no bound`;
        row.append(none);
      }
      if (f.hint) {
        const hint = document.createElement('span');
        hint.className = 'hint muted';
        hint.id = id + '-hint';
        hint.textContent = f.hint;
        row.append(hint);
      }
      row.append(error);
      form.append(row);
    }
    const button = document.createElement('button');
    button.type = 'submit';
    button.textContent = submitLabel;
    const message = document.createElement('p');
    message.className = 'message';
    message.id = prefix + '-message';
    message.setAttribute('role', 'status');
    form.append(button, message);
  }

  function valuesOf(form, fields) {
    const out = {};
    for (const f of fields) {
      const input = form.elements[f.key];
      out[f.key] = f.kind === 'bool' ? input.checked
        : f.clearable && form.elements[f.key + '-none'].checked ? null : input.value;
    }
    return out;
  }

  function showErrors(form, fields, errors) {
    for (const f of fields) {
      const input = form.elements[f.key];
      const why = errors[f.key] || '';
      $(input.id + '-error').textContent = why;
      if (why) input.setAttribute('aria-invalid', 'true'); else input.removeAttribute('aria-invalid');
    }
    const first = fields.find(f => errors[f.key]);
    if (first) form.elements[first.key].focus();
  }

  // Checks a form, asks to confirm (when `question`), sends it; the server's 400 beside the
  // field it names. Returns the answer on 2xx, else null.
  async function submit(form, fields, method, path, question) {
    const {body, errors} = checkForm(fields, valuesOf(form, fields), Date.now());
    const message = form.querySelector('.message');
    showErrors(form, fields, errors);
    if (Object.keys(errors).length) { say(message, 'Please correct the fields marked.', false); return null; }
    if (question && !confirm(question(body))) { say(message, 'Not sent.'); return null; }
    const res = await call(method, path, body);
    if (res.status >= 200 && res.status < 300) return res;
    const key = res.status === 400 ? fieldOfMessage(fields, messageOf(res)) : null;
    if (key) showErrors(form, fields, {[key]: messageOf(res)});
    say(message, `Refused (${res.status}): ${messageOf(res)}`, false);
    return null;
  }

  // ---- the sales ----

  async function loadSales() {
    const res = await call('GET', '/api/v1/items?unlisted=1' + ($('show-archived').checked ? '&archived=1' : ''));
    if (res.status !== 200) { say($('sales-message'), 'The sales could not be read: ' + messageOf(res), false); return; }
    const rows = res.body.items.map(v => {
      const tr = document.createElement('tr');
      tr.dataset.id = v.id;
      tr.dataset.state = v.state;
      const cells = [v.id, v.name, v.state.replace('_', ' '), v.remaining, v.initial_stock + v.restocked];
      cells.forEach((c, i) => {
        const td = document.createElement('td');
        td.textContent = c;
        if (i >= 3) td.className = 'num';
        tr.append(td);
      });
      const td = document.createElement('td');
      const b = document.createElement('button');
      b.type = 'button';
      b.className = 'quiet watch';
      b.textContent = 'Watch';
      b.setAttribute('aria-label', `Watch sale ${v.id}, ${v.name}`);
      b.addEventListener('click', () => watch(v.id));
      td.append(b);
      tr.append(td);
      return tr;
    });
    $('sales').tBodies[0].replaceChildren(...rows);
    say($('sales-message'), rows.length ? '' : 'No sales yet.');
  }

  // ---- one sale, live ----

  function watch(id) {
    watching = {id, view: null, at: 0, since: Date.now(), sold: [], persisted: [], refusals: {}, pending: null};
    $('live').hidden = false;
    say($('steer-message'), '');
    paging = null;
    // The detail, then once the refusals' counts as a baseline for their rates.
    refreshLive().then(refreshRefusals).then(() => $('live').scrollIntoView({block: 'start'}));
  }

  async function refreshLive() {
    if (!watching) return;
    const w = watching;
    const res = await call('GET', `/api/v1/items/${w.id}`);
    if (res.status !== 200 || w !== watching) return;
    const now = Date.now();
    w.view = res.body;
    w.at = now;
    w.sold.push({t: now, v: res.body.sold});
    w.persisted.push({t: now, v: res.body.persisted});
    for (const list of [w.sold, w.persisted]) while (list.length && list[0].t < now - SPAN) list.shift();
    const row = $('sales').querySelector(`tr[data-id="${w.id}"]`); // its row follows, no other call
    if (row) {
      row.dataset.state = res.body.state;
      row.cells[2].textContent = res.body.state.replace('_', ' ');
      row.cells[3].textContent = res.body.remaining;
      row.cells[4].textContent = res.body.initial_stock + res.body.restocked;
    }
    drawLive();
  }

  async function refreshRefusals() {
    const w = watching;
    const res = await call('GET', '/metrics');
    if (res.status !== 200 || w !== watching) return;
    const now = Date.now();
    const counts = refusalsOf(res.body);
    for (const [reason, v] of Object.entries(counts)) {
      const list = (w.refusals[reason] = w.refusals[reason] || []);
      list.push({t: now, v});
      while (list.length && list[0].t < now - SPAN) list.shift();
    }
    w.pending = gaugeOf(res.body, 'seckill_pending_orders');
  }

  const FIGURES = ['remaining', 'sold', 'queued', 'persisted', 'paid', 'cancelled', 'expired', 'returned',
                   'orders', 'per_buyer_limit', 'round', 'locks_held',
                   'room_joined', 'room_admitted', 'room_active', 'room_expired_unused',
                   'draw_entries', 'draw_won', 'draw_waitlisted', 'draw_skipped', 'draw_won_from_waitlist',
                   'draw_units_won'];
  function drawLive() {
    const w = watching;
    if (!w || !w.view) return;
    const v = {...w.view}, now = Date.now();
    for (const [k, n] of Object.entries(w.view.room || {})) // the room's counts, as room_<count>
      if (typeof n === 'number') v['room_' + k] = n;
    for (const [k, n] of Object.entries(w.view.draw || {})) // the draw's, as draw_<count>
      if (typeof n === 'number') v['draw_' + k] = n;
    const live = liveState(v, w.at, now);
    $('live-name').textContent = `${v.id}: ${v.name}`;
    $('live-state').textContent = live.state.replace('_', ' ');
    $('live-state').dataset.state = live.state;
    $('live-countdown').textContent = live.note;
    $('figures').replaceChildren(...FIGURES.filter(k => v[k] !== undefined).flatMap(k => {
      const dt = document.createElement('dt'), dd = document.createElement('dd');
      dt.textContent = k.replace(/_/g, ' ');
      dd.textContent = typeof v[k] === 'number' ? v[k].toLocaleString('en') : String(v[k]);
      dd.dataset.figure = k;
      return [dt, dd];
    }));
    const writes = rates(w.persisted).slice(-5);
    const perS = writes.length ? writes.reduce((a, p) => a + p.rate, 0) / writes.length : 0;
    $('lag').textContent = `Queue to PostgreSQL: ${v.queued} unit${v.queued === 1 ? '' : 's'} not yet written` +
      (v.queued > 0 && perS > 0 ? ` (about ${Math.ceil(v.queued / perS)} s at ${perS.toFixed(0)} units/s)` : '') +
      (w.pending !== null && w.pending >= 0 ? `; ${w.pending} order${w.pending === 1 ? '' : 's'} pending over every sale.` : '.');
    const series = {'units sold/s': rates(w.sold)};
    for (const [reason, list] of Object.entries(w.refusals)) {
      const r = rates(list);
      if (r.some(p => p.rate > 0)) series[reason.replace(/_/g, ' ') + '/s'] = r;
    }
    // The last five minutes, or since the sale was first watched (a minute at least).
    const span = Math.min(SPAN, Math.max(60 * 1000, now - w.since));
    $('chart').innerHTML = chartSvg(series, now, span);
    const last = (s) => (s.length ? s[s.length - 1].rate : 0);
    $('chart-caption').textContent = `Last ${Math.round(span / 60000)} min: ` + Object.entries(series)
      .map(([n, s]) => `${n} ${last(s).toFixed(1)}`).join(', ') +
      ' (refusals: every sale on this server, from /metrics every 5 s).';
    $('archive').disabled = Boolean(v.archived);
    $('draw').hidden = !drawReady(v, w.at, now);
    $('drawn').textContent = v.draw && v.draw.drawn_at
      ? `Drawn at ${v.draw.drawn_at}: K ${v.draw.secret}, beacon ${v.draw.beacon ? `“${v.draw.beacon}”` : '(none)'}.` : '';
  }

  // One request a second at most: the watched sale's detail, its place taken every fifth
  // second by /metrics (the refusals) and every tenth by the sales' list; the countdown runs
  // on this clock in between.
  function onTick() {
    tick++;
    if (tick % 10 === 3) loadSales();
    else if (watching && tick % 5 === 0) refreshRefusals().then(drawLive);
    else if (watching) refreshLive();
    drawLive();
  }

  // ---- steering ----

  async function steer(form, fields, method, suffix, question, done) {
    const w = watching;
    const res = await submit(form, fields, method, `/api/v1/items/${w.id}${suffix}`, question);
    if (!res) return;
    say(form.querySelector('.message'), '');
    say($('steer-message'), done(res.body), true);
    w.view = res.body;
    w.at = Date.now();
    drawLive();
    loadSales();
  }

  // The draw of the watched sale, with the beacon given; its answer is the draw's, the detail follows.
  async function drawNow(form) {
    const w = watching;
    const res = await submit(form, DRAW_FIELDS, 'POST', `/api/v1/items/${w.id}/draw`,
                             (b) => `Draw sale ${w.id} (${w.view.name}) now` +
                                    (b.beacon ? ` with the beacon “${b.beacon}”` : ' without a beacon') +
                                    '? It is made once: a second call answers the first result.');
    if (!res) return;
    const d = res.body.draw || {};
    say(form.querySelector('.message'), '');
    say($('steer-message'), `Drawn: ${d.won} won, ${d.waitlisted} waitlisted, ${d.skipped} skipped of ` +
        `${d.entries} entries; ${d.units_won} units won.`, true);
    await refreshLive();
  }

  async function archive() {
    const w = watching;
    if (!confirm(`Archive sale ${w.id} (${w.view.name}) for good? Nothing of it will sell again.`)) return;
    const res = await call('DELETE', `/api/v1/items/${w.id}`);
    if (res.status !== 200) { say($('steer-message'), `Refused (${res.status}): ${messageOf(res)}`, false); return; }
    w.view = res.body;
    say($('steer-message'), `Sale ${w.id} archived at ${res.body.archived_at}.`, true);
    drawLive();
    loadSales();
  }

  // ---- orders ----

  function orderRow(o) {
    const tr = document.createElement('tr');
    tr.dataset.order = o.order_id;
    const cells = [o.order_id, o.item_id, o.user_id, o.quantity, o.status, o.pay_by || ''];
    cells.forEach((c, i) => {
      const td = document.createElement('td');
      td.textContent = c;
      if (i === 3) td.className = 'num';
      if (i === 4) td.className = 'status ' + o.status;
      tr.append(td);
    });
    const td = document.createElement('td');
    const action = (label, cls, verb) => {
      const b = document.createElement('button');
      b.type = 'button';
      b.className = 'quiet ' + cls;
      b.textContent = label;
      b.setAttribute('aria-label', `${label} order ${o.order_id}`);
      b.addEventListener('click', () => settle(o.order_id, verb));
      td.append(b);
    };
    const open = o.status === 'queued' || o.status === 'persisted';
    if (open && scopes.has('admin')) action('Cancel', 'do-cancel', 'cancel');
    if (o.status === 'persisted' && o.pay_by && scopes.has('payments')) action('Mark paid', 'do-pay', 'pay');
    tr.append(td);
    return tr;
  }

  function showOrders(list, caption, next) {
    $('orders').tBodies[0].replaceChildren(...list.map(orderRow));
    $('orders-caption').textContent = caption;
    say($('orders-message'), list.length ? caption : caption + ': none.');
    $('next-page').hidden = !next;
    $('first-page').hidden = !(paging && paging.after);
  }

  async function findOrder(id) {
    const res = await call('GET', `/api/v1/orders/${encodeURIComponent(id)}`);
    paging = null;
    if (res.status !== 200) { showOrders([], `Order ${id}: ${messageOf(res)}`); return; }
    showOrders([res.body], `Order ${id}`);
  }

  async function findBuyer(buyer) {
    const res = await call('GET', `/api/v1/orders?user_id=${encodeURIComponent(buyer)}&limit=100`);
    paging = null;
    if (res.status !== 200) { showOrders([], `Buyer ${buyer}: ${messageOf(res)}`); return; }
    showOrders(res.body.orders, `Buyer ${buyer}'s orders, newest first`);
  }

  async function itemOrders() {
    const p = paging;
    const q = new URLSearchParams({limit: '20'});
    if (p.status) q.set('status', p.status);
    if (p.round) q.set('round', p.round);
    if (p.after) q.set('after', p.after);
    const res = await call('GET', `/api/v1/items/${p.item}/orders?${q}`);
    if (res.status !== 200) { showOrders([], `Sale ${p.item}'s orders: ${messageOf(res)}`); return; }
    p.next = res.body.next_after;
    showOrders(res.body.orders, `Sale ${p.item}'s orders${p.status ? ' (' + p.status + ')' : ''}, oldest first`,
               p.next);
  }

  async function settle(id, verb) {
    const question = verb === 'cancel' ? `Cancel order ${id}? Its units go back on sale.`
      : `Mark order ${id} paid? Do this only on the payment provider's word.`;
    if (!confirm(question)) return;
    const res = await call('POST', `/api/v1/orders/${id}/${verb}`, {});
    if (res.status !== 200) { say($('orders-message'), `Refused (${res.status}): ${messageOf(res)}`, false); return; }
    const row = $('orders').querySelector(`tr[data-order="${id}"]`);
    if (row) row.replaceWith(orderRow(res.body));
    say($('orders-message'), `Order ${id} is ${res.body.status}` +
      (verb === 'cancel' ? (res.body.returned === false && res.body.return === 'round_over'
        ? ': its round is over, nothing comes back.' : ': its units are back on sale.') : '.'), true);
    if (watching) refreshLive();
  }

  // ---- wiring ----

  buildForm($('create'), 'create', CREATE_FIELDS, 'Create the sale');
  buildForm($('restock'), 'restock', RESTOCK_FIELDS, 'Restock');
  buildForm($('reset'), 'reset', RESET_FIELDS, 'Start the new round');
  buildForm($('draw'), 'draw', DRAW_FIELDS, 'Draw');

  $('signin').addEventListener('submit', (e) => {
    e.preventDefault();
    const value = $('credential').value.trim();
    if (!value) { say($('signin-message'), 'A credential is needed.', false); return; }
    signIn(value);
  });
  $('signout').addEventListener('click', signOut);
  $('show-archived').addEventListener('change', loadSales);
  $('create').addEventListener('submit', async (e) => {
    e.preventDefault();
    const res = await submit($('create'), CREATE_FIELDS, 'POST', '/api/v1/items');
    if (!res) return;
    say($('create-message'), `Sale ${res.body.id} created (${res.body.state.replace('_', ' ')}).`, true);
    $('create-box').open = false; // the sale takes the screen; the form is one click away
    await loadSales();
    watch(res.body.id);
  });
  $('restock').addEventListener('submit', (e) => {
    e.preventDefault();
    steer($('restock'), RESTOCK_FIELDS, 'POST', '/stock',
          (b) => `Add ${b.add} units to sale ${watching.id}?`,
          (v) => `Restocked: ${v.remaining} remaining, ${v.restocked} added this round.`);
  });
  $('reset').addEventListener('submit', (e) => {
    e.preventDefault();
    steer($('reset'), RESET_FIELDS, 'POST', '/reset',
          (b) => `Start round ${watching.view.round + 1} of sale ${watching.id} with ${b.stock} units? ` +
                 "The buyers' units of this round are forgotten; its orders stay.",
          (v) => `Round ${v.round} started: ${v.remaining} units, ${v.state.replace('_', ' ')}.`);
  });
  $('archive').addEventListener('click', archive);
  $('draw').addEventListener('submit', (e) => { e.preventDefault(); drawNow($('draw')); });
  $('by-id').addEventListener('submit', (e) => { e.preventDefault(); findOrder($('order-id').value.trim()); });
  $('by-buyer').addEventListener('submit', (e) => { e.preventDefault(); findBuyer($('buyer-id').value.trim()); });
  $('by-item').addEventListener('submit', (e) => {
    e.preventDefault();
    if (!watching) { say($('orders-message'), 'Watch a sale first: its orders are listed here.', false); return; }
    paging = {item: watching.id, status: $('item-status').value, round: $('item-round').value.trim(), after: null};
    itemOrders();
  });
  $('next-page').addEventListener('click', () => { paging.after = paging.next; itemOrders(); });
  $('first-page').addEventListener('click', () => { paging.after = null; itemOrders(); });

  const kept = sessionStorage.getItem(KEY);
  if (kept) signIn(kept);
}

if (typeof module !== 'undefined' && module.exports) {
  module.exports = {CREATE_FIELDS, RESET_FIELDS, RESTOCK_FIELDS, DRAW_FIELDS, rfc3339Of, fieldValue, checkForm,
                    drawReady, fieldOfMessage, countdown, liveState, refusalsOf, gaugeOf, rates, chartSvg};
} else {
  page();
}

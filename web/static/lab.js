// lab.js: the laboratory dashboard. Shows GET /lab/results.json (written by
// `make experiments`) as a table and two SVG charts, and runs one strategy's
// experiment on a fresh item from the browser.
'use strict';

const SVG = 'http://www.w3.org/2000/svg';

function el(name, attrs, text) {
  const node = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

// The documents' figure of requests per second, when their sentence has one
// ("1950+/s", "550-620/s", "184 req/s"): the first number before "/s", not
// a path's ("/v3/seckill").
function documentsRps(text) {
  const m = /(?:^|[\s(])(\d+)\+?(?:-\d+)?\s*(?:req|orders)?\s*\/s(?![a-z])/.exec(text || '');
  return m ? Number(m[1]) : null;
}

// Horizontal grouped bars: one row per strategy, one bar per series. A log
// scale keeps 40 units of a race visible beside 15,000 of a load run. The
// drawing is as wide as its box in CSS pixels, so that its text keeps the
// size style.css gives it on a phone as on a desktop (a fixed viewBox scaled
// into a phone's half column made it 4 px high); redrawn when the box resizes.
function barChart(box, rows, series, log) {
  const total = Math.max(280, Math.floor(box.clientWidth || 450));
  const bar = 10, rowH = (bar + 2) * series.length + 10, top = 4, figures = 50;
  const left = Math.min(160, Math.round(total * 0.45)), width = total - left - figures;
  const f = v => (log ? Math.log10(1 + v) : v);
  const max = Math.max(1e-9, ...rows.flatMap(r => series.map(s => f(r[s.key] || 0))));
  const height = top + rows.length * rowH + 4;
  const svg = el('svg', {width: total, height, viewBox: `0 0 ${total} ${height}`});
  rows.forEach((r, i) => {
    const y = top + i * rowH;
    svg.append(el('text', {x: left - 6, y: y + rowH / 2 + 3, 'text-anchor': 'end'}, r.strategy));
    series.forEach((s, j) => {
      const v = r[s.key];
      if (v === null || v === undefined) return;
      const w = Math.max(v > 0 ? 1 : 0, width * f(v) / max);
      const by = y + 5 + j * (bar + 2);
      svg.append(el('rect', {x: left, y: by, width: w, height: bar, fill: s.color}));
      svg.append(el('text', {x: left + w + 4, y: by + bar - 1}, String(Math.round(v))));
    });
  });
  box.replaceChildren(svg);
}

function cell(row, text, cls) {
  const td = document.createElement('td');
  td.textContent = text;
  if (cls) td.className = cls;
  row.append(td);
}

function showResults(data) {
  const s = data.settings || {};
  document.getElementById('settings').textContent =
    `${s.requests} requests at concurrency ${s.concurrency} on a stock of ${s.stock} ` +
    `(delay ${s.delay_ms} ms), then a race of ${s.race && s.race.buyers} buyers on ` +
    `${s.race && s.race.stock} units with ${s.race && s.race.delay_ms} ms of work; ` +
    `${s.cpus} cores, ${s.tool}.`;
  const table = document.createElement('table');
  table.id = 'results';
  table.innerHTML = '<thead><tr><th>strategy</th><th>family</th><th>req/s</th><th>p99 ms</th>' +
    '<th>sold / stock</th><th>oversold</th><th>race: sold / stock</th><th>lock keys</th>' +
    '<th>verdict</th><th>documents</th></tr></thead><tbody></tbody>';
  const body = table.querySelector('tbody');
  for (const r of data.strategies || []) {
    const tr = document.createElement('tr');
    cell(tr, r.strategy);
    cell(tr, r.family);
    cell(tr, r.requests_per_s, 'num');
    cell(tr, r.p99_ms, 'num');
    cell(tr, `${r.sold} / ${r.initial_stock}`, 'num');
    cell(tr, r.oversold, r.oversold > 0 ? 'num bad' : 'num');
    cell(tr, r.race ? `${r.race.sold} / ${r.race.stock}` : '-', 'num');
    cell(tr, r.leftover_lock_keys, 'num');
    cell(tr, r.verdict + (r.agrees ? '' : ` (documents: ${r.documents_verdict})`),
         r.verdict === 'oversells' ? 'bad' : 'good');
    cell(tr, r.documents, 'muted docs');
    body.append(tr);
  }
  const scroll = document.createElement('div');
  scroll.className = 'scroll'; // a phone scrolls the table sideways, not the page
  scroll.append(table);
  document.getElementById('results-box').replaceChildren(scroll);

  const rows = (data.strategies || []).map(r => ({
    strategy: r.strategy, ours: r.requests_per_s, docs: documentsRps(r.documents),
    load: r.oversold, race: r.race ? r.race.oversold : null}));
  const draw = () => {
    barChart(document.getElementById('chart-rps'), rows,
             [{key: 'ours', color: '#2f6fdb'}, {key: 'docs', color: '#a0a8bb'}]);
    barChart(document.getElementById('chart-oversold'), rows,
             [{key: 'load', color: '#d9342b'}, {key: 'race', color: '#f0a35e'}], true);
  };
  draw();
  let width = window.innerWidth;
  window.addEventListener('resize', () => {
    if (window.innerWidth !== width) { // a phone's scroll resizes the height alone
      width = window.innerWidth;
      draw();
    }
  });
}

// The server runs without the laboratory (lab = off, the default): every
// experiments route answers 404 lab_off. The page says so, and runs nothing.
function showOff(message) {
  const off = document.getElementById('lab-off');
  const said = message || 'the laboratory is off on this server (lab = on turns it on)';
  off.textContent = said[0].toUpperCase() + said.slice(1) + '.';
  off.hidden = false;
  document.getElementById('settings').textContent = 'none: the laboratory is off.';
  document.getElementById('results-box').replaceChildren();
  for (const input of document.querySelectorAll('#run input, #run select, #run button')) {
    input.disabled = true;
  }
}

async function loadResults() {
  const box = document.getElementById('results-box');
  try {
    const res = await fetch('/lab/results.json', {cache: 'no-store'});
    if (res.status === 404) {
      const body = await json(res);
      if (body.error === 'lab_off') return showOff(body.message);
      box.innerHTML = '<p class="muted">No results yet: run <code>make experiments</code>.</p>';
      document.getElementById('settings').textContent = 'none yet.';
      return;
    }
    showResults(await res.json());
  } catch (e) {
    box.textContent = 'The results could not be read: ' + e.message;
  }
}

async function loadStrategies() {
  const select = document.getElementById('strategy');
  const res = await fetch('/api/v1/experiments');
  const body = await json(res);
  if (body.error === 'lab_off') return showOff(body.message);
  for (const s of body.strategies || []) {
    const option = document.createElement('option');
    option.value = s.name;
    option.textContent = `${s.name} (${s.family}, ${s.verdict})`;
    select.append(option);
  }
}

async function json(res) {
  return res.json().catch(() => ({}));
}

// One experiment: a fresh item of `stock`, `buyers` concurrent purchases
// through the strategy, then its audit.
async function run(event) {
  event.preventDefault();
  const progress = document.getElementById('progress');
  const verdict = document.getElementById('verdict');
  const button = document.getElementById('go');
  const strategy = document.getElementById('strategy').value;
  const token = document.getElementById('token').value;
  const stock = Number(document.getElementById('stock').value);
  const buyers = Number(document.getElementById('buyers').value);
  const delay = Number(document.getElementById('delay').value);
  verdict.textContent = '';
  progress.className = 'message';
  button.disabled = true;
  try {
    progress.textContent = `Creating an item of ${stock} units…`;
    let res = await fetch('/api/v1/items', {
      method: 'POST',
      headers: {'Authorization': 'Bearer ' + token, 'Content-Type': 'application/json'},
      body: JSON.stringify({name: `lab ${strategy}`, stock, lab: true})});
    const item = await json(res);
    if (res.status === 401) throw new Error('the admin token is wrong');
    if (res.status !== 201) throw new Error(item.message || `HTTP ${res.status}`);

    progress.textContent = `${buyers} buyers at once through ${strategy}…`;
    const base = `/api/v1/experiments/${strategy}`;
    const started = performance.now();
    const answers = await Promise.all(Array.from({length: buyers}, (_, i) =>
      fetch(`${base}/purchase?item=${item.id}&user_id=${i + 1}&delay_ms=${delay}`,
            {method: 'POST'}).then(r => r.status).catch(() => 0)));
    const seconds = (performance.now() - started) / 1000;
    const sold = answers.filter(s => s === 200).length;

    res = await fetch(`${base}/audit?item=${item.id}`);
    const audit = await json(res);
    if (!res.ok) throw new Error(audit.message || `audit: HTTP ${res.status}`);
    progress.textContent = `Item ${item.id}: ${sold} of ${buyers} answered "sold" in ` +
      `${seconds.toFixed(2)} s; the audit counts ${audit.sold} sold of ${audit.initial_stock}, ` +
      `${audit.remaining} left, ${audit.lock_keys} lock keys left behind.`;
    verdict.id = 'verdict';
    if (audit.oversold > 0) {
      verdict.className = 'verdict bad';
      verdict.textContent = `${strategy} oversold ${audit.oversold} units.`;
    } else {
      verdict.className = 'verdict good';
      verdict.textContent = `${strategy} did not oversell.`;
    }
  } catch (e) {
    progress.className = 'message error';
    progress.textContent = 'The experiment failed: ' + e.message + '.';
  } finally {
    button.disabled = false;
  }
}

document.getElementById('run').addEventListener('submit', run);
loadResults();
loadStrategies();

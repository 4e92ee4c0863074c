// support.js: what the browser tests (pages.js, cors.js) share: free ports, child processes (the
// seckill binaries, the example shop) logging under the run's folder and stopped together,
// waiting for a URL to answer, and calls of seckill's API with a credential.
'use strict';

const {spawn} = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');

// The source tree: the children's working folder.
const SOURCE = path.resolve(__dirname, '../../..');
const children = [];

// A TCP port on 127.0.0.1 that nothing listens on right now.
function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const {port} = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

// Starts bin with args and the test's environment plus env, its output into dir/log; stopAll()
// stops it.
function start(dir, bin, args, env, log) {
  const out = fs.openSync(path.join(dir, log), 'w');
  const child = spawn(bin, args, {cwd: SOURCE, env: {...process.env, ...env},
                                  stdio: ['ignore', out, out]});
  children.push(child);
  return child;
}

// SIGTERM to every child still running; resolves once all have exited.
async function stopAll() {
  await Promise.all(children.map(c => new Promise(resolve => {
    if (c.exitCode !== null || c.signalCode !== null) return resolve();
    c.once('exit', resolve);
    c.kill('SIGTERM');
  })));
}

// Waits up to 10 s for url to answer 2xx.
async function waitUp(url) {
  for (let i = 0; i < 100; i++) {
    try {
      if ((await fetch(url)).ok) return;
    } catch (e) { /* not listening yet */ }
    await new Promise(r => setTimeout(r, 100));
  }
  throw new Error(`${url} did not answer within 10 s`);
}

// One call of seckill's API at base with `Authorization: Bearer token`: {status, body (JSON)}.
async function api(base, token, method, urlPath, body) {
  const res = await fetch(base + urlPath, {
    method, headers: {Authorization: 'Bearer ' + token, 'Content-Type': 'application/json'},
    body: body === undefined ? undefined : JSON.stringify(body)});
  return {status: res.status, body: await res.json()};
}

// A headless Debian chromium with a fresh profile under dir, as the browser tests drive it;
// options (viewport, timezoneId, locale...) go to playwright's launchPersistentContext.
async function chromium(dir, options) {
  const profile = fs.mkdtempSync(path.join(dir, 'chromium-'));
  return require('playwright-core').chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium', headless: true, ...options,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync']});
}

// Runs main (async) as the test `name`: its children stopped either way, then "name: passed", or
// "name: FAILED" with the error and the folder of the logs, and exit code 1.
function run(name, main, logs) {
  main().then(async () => {
    await stopAll();
    console.log(`${name}: passed`);
  }, async (e) => {
    console.error(`${name}: FAILED:`, e && e.stack || e);
    console.error(`${name}: logs in`, logs);
    await stopAll();
    process.exit(1);
  });
}

module.exports = {SOURCE, freePort, start, stopAll, waitUp, api, chromium, run};

// server.js: a shop's backend in a few lines, for the page next to it (index.html), which runs on
// the shop's own origin and buys from seckill on another. At login it mints the buyer's token
// (README "Buyer tokens": "<user_id>.<expiry>.<base64url HMAC-SHA256>") with the secret it shares
// with seckill, and hands it to the page; the secret never leaves this process. No dependency
// but node (18 or later).
//
//   SECKILL_BUYER_TOKEN_SECRET=... SECKILL_URL=http://127.0.0.1:8080 SHOP_PORT=8081 node server.js
//
// then start seckill with buyer_auth = token, the same secret, and cors_origins =
// http://127.0.0.1:8081, and open http://127.0.0.1:8081/?item=1.
'use strict';

const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');

const SECRET = process.env.SECKILL_BUYER_TOKEN_SECRET;
const SECKILL_URL = process.env.SECKILL_URL || 'http://127.0.0.1:8080';
const PORT = Number(process.env.SHOP_PORT || 8081);
const TOKEN_TTL_S = 3600;

if (!SECRET || Buffer.byteLength(SECRET) < 32) {
  console.error('server.js: SECKILL_BUYER_TOKEN_SECRET must hold the 32+ byte secret seckill has');
  process.exit(2);
}

// The buyer token of user for the next hour, as seckill-admin buyer-token signs it.
function buyerToken(user) {
  const payload = `${user}.${Math.floor(Date.now() / 1000) + TOKEN_TTL_S}`;
  const mac = crypto.createHmac('sha256', SECRET).update(payload).digest('base64url');
  return {token: `${payload}.${mac}`, expires_in_s: TOKEN_TTL_S};
}

function send(res, status, type, body) {
  res.writeHead(status, {'Content-Type': type, 'Cache-Control': 'no-store'});
  res.end(body);
}

const page = fs.readFileSync(path.join(__dirname, 'index.html'));

http.createServer((req, res) => {
  const url = new URL(req.url, 'http://shop');
  if (req.method === 'GET' && url.pathname === '/') return send(res, 200, 'text/html', page);
  if (req.method === 'POST' && url.pathname === '/login') {
    let body = '';
    req.on('data', (chunk) => { body += chunk; if (body.length > 1024) req.destroy(); });
    req.on('end', () => {
      // A real shop checks a password or its session cookie here and takes the account's id from
      // its own records; this one believes the number it is given.
      let user;
      try { user = JSON.parse(body).user_id; } catch (e) { user = null; }
      if (!Number.isSafeInteger(user) || user < 1)
        return send(res, 400, 'application/json', JSON.stringify({error: 'user_id: 1 or more'}));
      send(res, 200, 'application/json',
           JSON.stringify({user_id: user, seckill_url: SECKILL_URL, ...buyerToken(user)}));
    });
    return;
  }
  send(res, 404, 'text/plain', 'not found\n');
}).listen(PORT, '127.0.0.1', () => console.log(`shop on http://127.0.0.1:${PORT}, seckill at ${SECKILL_URL}`));

-- 014_pow.sql: proof-of-work on joining a room and on entering a draw
-- (issue 28), optional per item. pow_maxnumber is ALTCHA's difficulty: the
-- largest secret number of a challenge (a solver tries half of them on
-- average); null asks for no work. A challenge lives pow_ttl_s seconds.
ALTER TABLE items
    ADD COLUMN pow_maxnumber integer CHECK (pow_maxnumber BETWEEN 1000 AND 10000000),
    ADD COLUMN pow_ttl_s integer NOT NULL DEFAULT 300 CHECK (pow_ttl_s BETWEEN 1 AND 86400);

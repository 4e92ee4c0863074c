-- 012_room.sql: the waiting room (issue 27). An item's admission is "race"
-- (whoever reaches Redis first, as before) or "room": buyers join a queue
-- from prequeue_opens_at, the pre-start joiners are ordered by a secret
-- committed before anyone joined, and places are admitted at admit_per_s.
-- The terms live here with the item's other terms, and so does the round's
-- secret, so that a Redis that lost its data (reconcile's rebuild) cannot
-- lose the shuffle's key.
ALTER TABLE items
    ADD COLUMN admission text NOT NULL DEFAULT 'race' CHECK (admission IN ('race', 'room')),
    ADD COLUMN prequeue_opens_at timestamptz,
    ADD COLUMN admit_per_s double precision CHECK (admit_per_s > 0),
    ADD COLUMN admit_burst bigint CHECK (admit_burst >= 0),
    ADD COLUMN max_active bigint CHECK (max_active >= 1),
    ADD COLUMN admission_ttl_s integer NOT NULL DEFAULT 120
        CHECK (admission_ttl_s BETWEEN 1 AND 86400),
    -- K, the current round's 32-byte secret (hex); its SHA-256 is published
    -- from the round's start, K itself from starts_at.
    ADD COLUMN room_secret text CHECK (room_secret ~ '^[0-9a-f]{64}$'),
    ADD CONSTRAINT items_room CHECK (admission <> 'room' OR (starts_at IS NOT NULL
        AND admit_per_s IS NOT NULL AND room_secret IS NOT NULL
        AND (prequeue_opens_at IS NULL OR prequeue_opens_at < starts_at)));

-- The key every server derives the rounds' admission-token keys from
-- (HMAC-SHA256(key, "seckill-admission-key-v1|<item>|<round>")): drawn once by
-- the first server that needs it, never revealed.
CREATE TABLE room_master (
    one    boolean PRIMARY KEY DEFAULT true CHECK (one),
    secret text    NOT NULL CHECK (secret ~ '^[0-9a-f]{64}$')
);

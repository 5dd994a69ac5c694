-- The ambiguous commit: every turn pays once.  A payment carries the
-- client's idempotency key; the key is unique, so asking twice with the
-- same key can never make two payments.
CREATE TABLE payments (
    id        bigserial PRIMARY KEY,
    idem_key  text NOT NULL UNIQUE,
    turn      int NOT NULL,
    amount    int NOT NULL CHECK (amount > 0)
);

-- The refunds system of seeds/000, as shipped: both sides of the payment boundary
-- in one schema so the invariants can see them.  The agent's side: disputes
-- and jobs.  The provider's side (written only by ./provider): refunds, the
-- accounts it credits with their credit log, and its idempotency-key store.
--
-- This is schema.sql without its last index, the unique one on settled
-- refunds (used by soak.yaml and mutants/no-unique.yaml); keep them in step.

-- Which reset of the schema this is: a request from an earlier seed that
-- reaches the provider late (a duplicate delivered after the seed ended)
-- carries an old epoch and is refused instead of landing in this world.
CREATE TABLE world (epoch bigint NOT NULL);
INSERT INTO world VALUES (txid_current());

CREATE TABLE accounts (
    id                  text PRIMARY KEY,
    credit_balance_eur  numeric(12,2) NOT NULL DEFAULT 0
);

CREATE TABLE credit_log (
    id          bigserial PRIMARY KEY,
    account_id  text NOT NULL REFERENCES accounts (id),
    amount_eur  numeric(12,2) NOT NULL,
    refund_id   bigint NOT NULL
);

CREATE TABLE disputes (
    id          text PRIMARY KEY,
    account_id  text NOT NULL REFERENCES accounts (id),
    amount_eur  numeric(12,2) NOT NULL,
    refunded    boolean NOT NULL DEFAULT false   -- the agent's own record
);

-- The provider's ledger of money that moved.  sender is who asked (turn and
-- attempt), so an invariant's rows tell the retry story.
CREATE TABLE refunds (
    id               bigserial PRIMARY KEY,
    dispute_id       text NOT NULL REFERENCES disputes (id),
    amount_eur       numeric(12,2) NOT NULL,
    state            text NOT NULL CHECK (state IN ('pending', 'settled')),
    idempotency_key  text,
    sender           text NOT NULL
);

-- The provider's response cache.  Written after the refund commits, as many
-- real providers do: two requests with one key that arrive together both
-- miss it.  That window is what the unique index below closes.
CREATE TABLE idempotency_keys (
    key       text PRIMARY KEY,
    response  text NOT NULL
);

-- The agent's work items: accepted -> in_progress (with a lease) -> done |
-- failed, and in_progress -> abandoned when the lease ran out (the reaper).
CREATE TABLE jobs (
    id           bigserial PRIMARY KEY,
    dispute_id   text NOT NULL REFERENCES disputes (id),
    owner        text NOT NULL,
    state        text NOT NULL CHECK (state IN
                   ('accepted', 'in_progress', 'done', 'failed', 'abandoned')),
    lease_until  timestamptz
);

INSERT INTO accounts (id) VALUES ('acc_a'), ('acc_b');
INSERT INTO disputes (id, account_id, amount_eur) VALUES
    ('dsp_0', 'acc_a', 40), ('dsp_1', 'acc_b', 15),
    ('dsp_2', 'acc_a', 120), ('dsp_3', 'acc_b', 65);
-- An agent crashed an hour ago holding this job: only the reaper ends it.
INSERT INTO jobs (dispute_id, owner, state, lease_until) VALUES
    ('dsp_2', 'agent-that-crashed', 'in_progress', now() - interval '1 hour');

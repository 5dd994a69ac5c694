-- seeds/000's refunds system, the part a support agent's parallel tool
-- calls touch: disputes refunded as store credit to their account, every
-- credit a line of the ledger.  One customer with three open disputes: the
-- agent's calls for them all credit one account.
CREATE TABLE accounts (
    id                 int PRIMARY KEY,
    customer           text NOT NULL,
    credit_balance_eur int NOT NULL
);

CREATE TABLE disputes (
    id          text PRIMARY KEY,
    account_id  int NOT NULL REFERENCES accounts (id),
    amount_eur  int NOT NULL CHECK (amount_eur > 0),
    state       text NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'refunded'))
);

CREATE TABLE refunds (
    id          bigserial PRIMARY KEY,
    dispute_id  text NOT NULL REFERENCES disputes (id),
    amount_eur  int NOT NULL,
    state       text NOT NULL,
    turn        int NOT NULL
);

-- seeds/000: "The sum of credit_log.amount_eur for an account equals
-- accounts.credit_balance_eur."
CREATE TABLE credit_log (
    id          bigserial PRIMARY KEY,
    account_id  int NOT NULL REFERENCES accounts (id),
    amount_eur  int NOT NULL,
    dispute_id  text NOT NULL,
    turn        int NOT NULL
);

INSERT INTO accounts VALUES (1, 'acme', 0);
INSERT INTO disputes (id, account_id, amount_eur) VALUES
    ('dsp_1', 1, 40), ('dsp_2', 1, 15), ('dsp_3', 1, 25);

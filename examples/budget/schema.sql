-- A marketing team's quarter: one budget, spent by campaign agents.  Every
-- spend is a row; the budget row keeps what is left.  Small on purpose: six
-- agents that each want 100..300 run it dry, so they meet at its end.
CREATE TABLE budgets (
    id         int PRIMARY KEY,
    total      int NOT NULL,
    remaining  int NOT NULL
);

CREATE TABLE spends (
    id         bigserial PRIMARY KEY,
    budget_id  int NOT NULL REFERENCES budgets (id),
    campaign   text NOT NULL,
    amount     int NOT NULL CHECK (amount > 0),
    turn       int NOT NULL
);

INSERT INTO budgets VALUES (1, 1000, 1000);

-- The billing core of seeds/002: students, lessons (class sessions), the
-- attendance journal, and an append-only ledger.  Fixtures come from
-- ./ledger_setup (prices drawn from the seed).
--
-- schema-no-unique.sql is this file without the unique index on reverses_id
-- (the system as shipped, and the "no-unique" mutant); keep them in step.

CREATE TABLE student (
    id              int PRIMARY KEY,
    billing_frozen  boolean NOT NULL DEFAULT false
);

CREATE TABLE class_session (
    id            int PRIMARY KEY,
    price         int NOT NULL CHECK (price >= 0),
    is_cancelled  boolean NOT NULL DEFAULT false
);

-- The journal teachers edit: a mark may be cleared (deleted) and made again.
CREATE TABLE attendance (
    student_id        int NOT NULL REFERENCES student (id),
    class_session_id  int NOT NULL REFERENCES class_session (id),
    PRIMARY KEY (student_id, class_session_id)
);

-- Money.  A charge is negative, its reversal positive and names the charge
-- it reverses; a payment is positive and names the provider's payment id.
CREATE TABLE ledger_transaction (
    id                   bigserial PRIMARY KEY,
    student_id           int NOT NULL REFERENCES student (id),
    class_session_id     int REFERENCES class_session (id),
    kind                 text NOT NULL
                         CHECK (kind IN ('LESSON_CHARGE', 'CHARGE_REVERSAL', 'PAYMENT')),
    amount               int NOT NULL,
    reverses_id          bigint REFERENCES ledger_transaction (id),
    provider_payment_id  text,
    created_by           text NOT NULL
);

-- Append-only: you never edit a charge, you append a reversal.
CREATE FUNCTION ledger_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'ledger_transaction is append-only (% refused)', TG_OP;
END $$;
CREATE TRIGGER ledger_append_only BEFORE UPDATE OR DELETE ON ledger_transaction
    FOR EACH ROW EXECUTE FUNCTION ledger_append_only();
CREATE TRIGGER ledger_no_truncate BEFORE TRUNCATE ON ledger_transaction
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_append_only();

-- High-water marks: every operation records how many ledger rows it saw
-- as it committed.  The ledger shrank if one of them is above count(*).
CREATE TABLE ledger_seen (
    n       bigint NOT NULL,
    seen_by text NOT NULL
);

-- The test's rule (seeds/002): the only error an operation may meet is a
-- cancelled lesson.  Any other failure (a deadlock, a constraint) is
-- written here by the turn that met it, and an invariant reads it.
CREATE TABLE op_failure (
    turn      text NOT NULL,
    op        text NOT NULL,
    sqlstate  text,
    message   text NOT NULL
);

-- The commenter's fix: a charge is reversed at most once, whatever path
-- tries it.  Charges leave reverses_id NULL, and NULLs never collide.
CREATE UNIQUE INDEX one_reversal_per_charge ON ledger_transaction (reverses_id);

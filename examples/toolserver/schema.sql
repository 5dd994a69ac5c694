-- The reservation system of seeds/001, served by a tool server: an order row
-- carries a running count of reserved items, and every reservation also
-- appends an event (the audit table whose join against the orders found the
-- 41 short orders).  Two orders on purpose: four agents' eight calls on two
-- orders collide every seed.
CREATE TABLE orders (
    id              int PRIMARY KEY,
    items_reserved  int NOT NULL DEFAULT 0
);

CREATE TABLE reservation_events (
    id        bigserial PRIMARY KEY,
    order_id  int NOT NULL REFERENCES orders (id),
    n         int NOT NULL CHECK (n > 0),
    turn      int NOT NULL
);

INSERT INTO orders (id) VALUES (1), (2);

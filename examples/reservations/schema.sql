-- The reservation system of seeds/001: an order row carries a running count
-- of reserved items; every reservation also appends an event.  A tiny pool
-- of orders on purpose — eight turns over three orders collide every seed.
CREATE TABLE orders (
    id              int PRIMARY KEY,
    items_reserved  int NOT NULL DEFAULT 0,
    version         int NOT NULL DEFAULT 0
);

CREATE TABLE reservation_events (
    id        bigserial PRIMARY KEY,
    order_id  int NOT NULL REFERENCES orders (id),
    n         int NOT NULL CHECK (n > 0),
    turn      int NOT NULL
);

INSERT INTO orders (id) VALUES (1), (2), (3);

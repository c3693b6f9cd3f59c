-- tb_periodic_command holds one row per periodic command (core/periodic):
-- its cursor, every occurrence at or before which is decided (committed
-- as an outbox event, or skipped by the command's catch-up policy). A
-- relay's pass locks the row (FOR UPDATE SKIP LOCKED), appends the due
-- occurrences' events to tb_outbox_event and moves the cursor in the same
-- transaction, so any number of relays commit each occurrence once. A
-- command that no relay runs any more leaves its row; deleting the row
-- restarts the command from the next occurrence after that moment.
CREATE TABLE tb_periodic_command (
    name          varchar(100) NOT NULL,
    cursor_at     timestamptz  NOT NULL,
    last_event_id uuid         NULL,
    committed_at  timestamptz  NULL,
    created_at    timestamptz  NOT NULL,
    updated_at    timestamptz  NOT NULL,
    CONSTRAINT pk_periodic_command PRIMARY KEY (name)
);

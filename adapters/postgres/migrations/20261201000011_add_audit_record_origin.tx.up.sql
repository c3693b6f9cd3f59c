-- origin is where an operator command ran, "user@host" from the OS of the
-- machine that ran the relay CLI (outbox replay, release-leases), recorded
-- beside the free-text --operator and --reason, which anyone may type.
-- Records from API requests leave it empty: their actor is the
-- authenticated subject.
ALTER TABLE tb_audit_record ADD COLUMN origin varchar(256) NOT NULL DEFAULT '';

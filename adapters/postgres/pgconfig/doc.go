// Package pgconfig is ports.ConfigStore on tb_system_config: reads, the
// compare-and-set update with its audit record in one transaction, and the
// audit record of a rejected update. Audit records go through a
// pgoutbox.AuditWriter, so the default publishes them as outbox events.
package pgconfig

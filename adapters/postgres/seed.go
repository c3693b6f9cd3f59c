package postgres

// ConfigSeed is one registered system-config key with its default, as the
// seed-system-config backfill inserts it into tb_system_config.
type ConfigSeed struct {
	Key         string // module.group.name, lower snake case segments
	Value       string // default, encoded as text for its Type
	Type        string // string, int, bool or json
	Module      string
	Description string // 中文
	ReadOnly    bool
}

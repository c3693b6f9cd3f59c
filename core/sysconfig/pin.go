package sysconfig

import (
	"fmt"
	"slices"
	"strings"
)

// CodeKeyPinned is the 409 of an update to a key that a running process
// takes from its environment instead (the change would do nothing there).
const CodeKeyPinned = "CONFIG_KEY_PINNED"

// Pin says that a running process reads Key from Source (for example
// "env RELAY_BATCH_SIZE") instead of from system config. Owner names the
// process (the relay's lease owner). Processes announce their pins so the
// config view can show them and updates can be refused instead of
// answering 200 for a change that takes no effect.
type Pin struct {
	Key    string
	Source string
	// Owner is stored in tb_system_config_pin's holder column; the column
	// keeps its name.
	Owner string
}

// PinnedBy renders the pins of one key for the view, sorted and
// deduplicated: "env RELAY_BATCH_SIZE (relay-a, relay-b)". It is "" when
// pins is empty.
func PinnedBy(pins []Pin) string {
	if len(pins) == 0 {
		return ""
	}
	bySource := map[string][]string{}
	for _, p := range pins {
		bySource[p.Source] = append(bySource[p.Source], p.Owner)
	}
	sources := make([]string, 0, len(bySource))
	for s := range bySource {
		sources = append(sources, s)
	}
	slices.Sort(sources)
	parts := make([]string, 0, len(sources))
	for _, s := range sources {
		owners := slices.Compact(slices.Sorted(slices.Values(bySource[s])))
		parts = append(parts, fmt.Sprintf("%s (%s)", s, strings.Join(owners, ", ")))
	}
	return strings.Join(parts, "; ")
}

// PinnedError refuses an update of a pinned key (409 CONFIG_KEY_PINNED).
type PinnedError struct {
	Key string
	By  string // PinnedBy of the key's pins
}

// Error implements error.
func (e *PinnedError) Error() string {
	return fmt.Sprintf("config key %q is pinned by %s: a change would not take effect there; remove the pin (unset the variable and restart) before changing the key", e.Key, e.By)
}

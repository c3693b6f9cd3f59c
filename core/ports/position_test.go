package ports_test

import (
	"testing"

	"github.com/july/template/core/ports"
)

func TestDBPositionAfter(t *testing.T) {
	seen := ports.DBPosition{System: "s", Timeline: 2, LSN: 100}
	for _, c := range []struct {
		name string
		now  ports.DBPosition
		want bool
	}{
		{"the same", seen, true},
		{"moved on", ports.DBPosition{System: "s", Timeline: 2, LSN: 101}, true},
		{"set back on its timeline (a disk snapshot)", ports.DBPosition{System: "s", Timeline: 2, LSN: 99}, false},
		{"a new timeline (a restore, a promotion)", ports.DBPosition{System: "s", Timeline: 3, LSN: 500}, false},
		{"another cluster", ports.DBPosition{System: "t", Timeline: 2, LSN: 500}, false},
	} {
		if got := c.now.After(seen); got != c.want {
			t.Errorf("%s: %+v.After(%+v) = %v, want %v", c.name, c.now, seen, got, c.want)
		}
	}
}

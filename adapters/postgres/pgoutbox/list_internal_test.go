package pgoutbox

import (
	"testing"

	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

// Only a lookup in every status reads the view; the newest rows, or one
// status, read the table (its primary key in order, or that status's
// index), which the view would turn into a scan and a sort.
func TestListReadsTheViewOnlyForLookups(t *testing.T) {
	for _, tc := range []struct {
		f    ports.OutboxFilter
		view bool
	}{
		{ports.OutboxFilter{}, false},
		{ports.OutboxFilter{EventType: "order.placed"}, false},
		{ports.OutboxFilter{Status: outbox.Pending, AggregateID: "x"}, false},
		{ports.OutboxFilter{AggregateType: "order", AggregateID: "x"}, true},
		{ports.OutboxFilter{CorrelationID: "x"}, true},
	} {
		if got := fromView(tc.f); got != tc.view {
			t.Errorf("fromView(%+v) = %t, want %t", tc.f, got, tc.view)
		}
	}
}

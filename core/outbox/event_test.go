package outbox_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/lease"
	"github.com/july/template/core/outbox"
)

func TestNew(t *testing.T) {
	t.Parallel()

	t.Run("Valid", func(t *testing.T) {
		t.Parallel()

		ev, err := outbox.New(validParams())
		require.NoError(t, err)
		require.Equal(t, outbox.Event{
			EventID: testEventID, EventType: "topup.created", PayloadVersion: 1,
			AggregateType: "topup_order", AggregateID: "42", ResourceType: "wallet", ResourceID: "w-7",
			BusinessKey: "TP20300102-0001", RequestID: "req-1", CorrelationID: "corr-1",
			Payload: json.RawMessage(`{"order_id":"42","amount":1000}`),
			Status:  outbox.Pending, NextAttemptAt: t0, CreatedAt: t0, UpdatedAt: t0,
			Lease: lease.Lease{},
		}, ev)
	})

	t.Run("Delayed", func(t *testing.T) {
		t.Parallel()

		p := validParams()
		p.NotBefore = t0.Add(time.Hour)
		ev, err := outbox.New(p)
		require.NoError(t, err)
		require.Equal(t, t0.Add(time.Hour), ev.NextAttemptAt, "claimable from not_before")
		require.Equal(t, t0.Add(time.Hour), ev.NotBefore)
		require.Equal(t, t0.Add(time.Hour), ev.DueAt(), "due at not_before")
		require.Equal(t, t0, ev.CreatedAt, "occurred_at stays the commit's time")

		p.NotBefore = t0.Add(outbox.MaxDelay)
		_, err = outbox.New(p)
		require.NoError(t, err, "MaxDelay ahead is allowed")
	})

	t.Run("NotBeforeWithinToleranceIsDueNow", func(t *testing.T) {
		t.Parallel()

		p := validParams()
		p.NotBefore = t0.Add(-outbox.NotBeforeTolerance)
		ev, err := outbox.New(p)
		require.NoError(t, err)
		require.Equal(t, t0, ev.NextAttemptAt)
		require.True(t, ev.NotBefore.IsZero(), "not delayed: no not_before stored")
		require.Equal(t, t0, ev.DueAt())
	})

	t.Run("CorrelationDefaultsToRequestID", func(t *testing.T) {
		t.Parallel()

		p := validParams()
		p.CorrelationID = ""
		ev, err := outbox.New(p)
		require.NoError(t, err)
		require.Equal(t, "req-1", ev.CorrelationID)
	})

	t.Run("BusinessKeyOptional", func(t *testing.T) {
		t.Parallel()

		p := validParams()
		p.BusinessKey = ""
		_, err := outbox.New(p)
		require.NoError(t, err)
	})

	long := func(n int) string { return strings.Repeat("a", n) }
	tests := []struct {
		name  string
		edit  func(*outbox.NewParams)
		field string
	}{
		{"EventIDEmpty", func(p *outbox.NewParams) { p.EventID = "" }, "event_id"},
		{"EventIDUpper", func(p *outbox.NewParams) { p.EventID = strings.ToUpper(testEventID) }, "event_id"},
		{"EventIDNoDashes", func(p *outbox.NewParams) { p.EventID = strings.ReplaceAll(testEventID, "-", "") }, "event_id"},
		{"EventIDBraces", func(p *outbox.NewParams) { p.EventID = "{" + testEventID + "}" }, "event_id"},
		{"EventIDNil", func(p *outbox.NewParams) { p.EventID = "00000000-0000-0000-0000-000000000000" }, "event_id"},
		{"EventTypeEmpty", func(p *outbox.NewParams) { p.EventType = "" }, "event_type"},
		{"EventTypeNoDot", func(p *outbox.NewParams) { p.EventType = "topup" }, "event_type"},
		{"EventTypeUpper", func(p *outbox.NewParams) { p.EventType = "Topup.Created" }, "event_type"},
		{"EventTypeTrailingDot", func(p *outbox.NewParams) { p.EventType = "topup.created." }, "event_type"},
		{"EventTypeDigitStart", func(p *outbox.NewParams) { p.EventType = "topup.1created" }, "event_type"},
		{"EventTypeDash", func(p *outbox.NewParams) { p.EventType = "top-up.created" }, "event_type"},
		{"EventTypeTooLong", func(p *outbox.NewParams) { p.EventType = "a." + long(99) }, "event_type"},
		{"VersionZero", func(p *outbox.NewParams) { p.PayloadVersion = 0 }, "payload_version"},
		{"VersionNegative", func(p *outbox.NewParams) { p.PayloadVersion = -1 }, "payload_version"},
		{"AggregateTypeEmpty", func(p *outbox.NewParams) { p.AggregateType = "" }, "aggregate_type"},
		{"AggregateTypeTooLong", func(p *outbox.NewParams) { p.AggregateType = long(outbox.MaxTypeLen + 1) }, "aggregate_type"},
		{"AggregateIDEmpty", func(p *outbox.NewParams) { p.AggregateID = "" }, "aggregate_id"},
		{"AggregateIDTooLong", func(p *outbox.NewParams) { p.AggregateID = long(outbox.MaxIDLen + 1) }, "aggregate_id"},
		{"ResourceTypeEmpty", func(p *outbox.NewParams) { p.ResourceType = "" }, "resource_type"},
		{"ResourceIDEmpty", func(p *outbox.NewParams) { p.ResourceID = "" }, "resource_id"},
		{"ResourceIDSpace", func(p *outbox.NewParams) { p.ResourceID = "w 7" }, "resource_id"},
		{"BusinessKeyTooLong", func(p *outbox.NewParams) { p.BusinessKey = long(outbox.MaxIDLen + 1) }, "business_key"},
		{"RequestIDEmpty", func(p *outbox.NewParams) { p.RequestID, p.CorrelationID = "", "corr-1" }, "request_id"},
		{"RequestIDControl", func(p *outbox.NewParams) { p.RequestID = "req\n1" }, "request_id"},
		{"RequestIDNonASCII", func(p *outbox.NewParams) { p.RequestID = "请求-1" }, "request_id"},
		{"CorrelationIDTooLong", func(p *outbox.NewParams) { p.CorrelationID = long(outbox.MaxIDLen + 1) }, "correlation_id"},
		{"CorrelationIDDel", func(p *outbox.NewParams) { p.CorrelationID = "c\x7f" }, "correlation_id"},
		{"NowZero", func(p *outbox.NewParams) { p.Now = time.Time{} }, "created_at"},
		{"PayloadBytes", func(p *outbox.NewParams) { p.Payload = []byte(`{"a":1}`) }, "payload"},
		{"NotBeforePast", func(p *outbox.NewParams) { p.NotBefore = p.Now.Add(-outbox.NotBeforeTolerance - time.Second) }, "not_before"},
		{"NotBeforeTooFar", func(p *outbox.NewParams) { p.NotBefore = p.Now.Add(outbox.MaxDelay + time.Second) }, "not_before"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			p := validParams()
			tt.edit(&p)
			ev, err := outbox.New(p)
			var ve *outbox.ValidationError
			require.ErrorAs(t, err, &ve, "params %+v", p)
			require.Equal(t, tt.field, ve.Field, "err %v", err)
			require.Contains(t, err.Error(), "invalid "+tt.field)
			require.Equal(t, outbox.Event{}, ev)
		})
	}

	t.Run("AtLimits", func(t *testing.T) {
		t.Parallel()

		p := validParams()
		p.EventType = "a." + long(outbox.MaxEventTypeLen-2)
		p.AggregateType, p.ResourceType = long(outbox.MaxTypeLen), long(outbox.MaxTypeLen)
		p.AggregateID, p.ResourceID, p.BusinessKey = long(outbox.MaxIDLen), long(outbox.MaxIDLen), long(outbox.MaxIDLen)
		p.RequestID, p.CorrelationID = long(outbox.MaxIDLen), "!~"
		_, err := outbox.New(p)
		require.NoError(t, err)
	})

	t.Run("AllProblemsJoined", func(t *testing.T) {
		t.Parallel()

		_, err := outbox.New(outbox.NewParams{})
		joined, ok := err.(interface{ Unwrap() []error })
		require.True(t, ok, "err %T", err)
		var fields []string
		for _, e := range joined.Unwrap() {
			var ve *outbox.ValidationError
			require.ErrorAs(t, e, &ve)
			fields = append(fields, ve.Field)
		}
		require.Equal(t, []string{
			"event_id", "event_type", "payload_version", "aggregate_type", "aggregate_id",
			"resource_type", "resource_id", "request_id", "correlation_id", "created_at", "payload",
		}, fields)
	})
}

type custom struct{ out string }

func (c custom) MarshalJSON() ([]byte, error) { return []byte(c.out), nil }

type namedKey string

func TestMarshalPayload(t *testing.T) {
	t.Parallel()

	var nilStruct *topupCreated
	var nilMap map[string]int
	tests := []struct {
		name    string
		in      any
		want    string
		wantErr error
	}{
		{"Struct", topupCreated{OrderID: "1", Amount: 2}, `{"order_id":"1","amount":2}`, nil},
		{"StructPointer", &topupCreated{OrderID: "1"}, `{"order_id":"1","amount":0}`, nil},
		{"EmptyStruct", struct{}{}, `{}`, nil},
		{"Map", map[string]any{"b": 1, "a": "x"}, `{"a":"x","b":1}`, nil},
		{"NamedKeyMap", map[namedKey]int{"k": 1}, `{"k":1}`, nil},
		{"CustomObject", custom{out: `{"x":1}`}, `{"x":1}`, nil},
		{"Nil", nil, "", outbox.ErrPayloadNotStructured},
		{"Bytes", []byte(`{"a":1}`), "", outbox.ErrPayloadNotStructured},
		{"RawMessage", json.RawMessage(`{"a":1}`), "", outbox.ErrPayloadNotStructured},
		{"RawMessagePointer", &json.RawMessage{'{', '}'}, "", outbox.ErrPayloadNotStructured},
		{"String", `{"a":1}`, "", outbox.ErrPayloadNotStructured},
		{"Int", 42, "", outbox.ErrPayloadNotStructured},
		{"Float", 4.2, "", outbox.ErrPayloadNotStructured},
		{"Bool", true, "", outbox.ErrPayloadNotStructured},
		{"Slice", []topupCreated{{}}, "", outbox.ErrPayloadNotStructured},
		{"Array", [1]int{1}, "", outbox.ErrPayloadNotStructured},
		{"IntKeyMap", map[int]string{1: "a"}, "", outbox.ErrPayloadNotStructured},
		{"NilStructPointer", nilStruct, "", outbox.ErrPayloadNotStructured},
		{"NilMap", nilMap, "", outbox.ErrPayloadNotStructured},
		{"CustomString", custom{out: `"eyJhIjoxfQ=="`}, "", outbox.ErrPayloadNotStructured},
		{"TooLarge", map[string]string{"x": strings.Repeat("a", outbox.MaxPayloadBytes)}, "", outbox.ErrPayloadTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			got, err := outbox.MarshalPayload(tt.in)
			if tt.wantErr == nil {
				require.NoError(t, err, "payload %#v", tt.in)
				require.JSONEq(t, tt.want, string(got))
				return
			}
			require.ErrorIs(t, err, tt.wantErr, "payload %T", tt.in)
			var ve *outbox.ValidationError
			require.ErrorAs(t, err, &ve)
			require.Equal(t, "payload", ve.Field)
			require.Nil(t, got)
		})
	}

	t.Run("AtSizeLimit", func(t *testing.T) {
		t.Parallel()

		// {"x":"…"} is 8 bytes of framing.
		in := map[string]string{"x": strings.Repeat("a", outbox.MaxPayloadBytes-8)}
		got, err := outbox.MarshalPayload(in)
		require.NoError(t, err)
		require.Len(t, got, outbox.MaxPayloadBytes)
	})

	t.Run("Unencodable", func(t *testing.T) {
		t.Parallel()

		_, err := outbox.MarshalPayload(map[string]any{"c": make(chan int)})
		var ue *json.UnsupportedTypeError
		require.ErrorAs(t, err, &ue)
		require.NotErrorIs(t, err, outbox.ErrPayloadNotStructured)
	})
}

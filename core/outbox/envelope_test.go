package outbox_test

import (
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/outbox"
)

func TestEnvelope(t *testing.T) {
	t.Parallel()

	t.Run("MarshalsPayloadAsObject", func(t *testing.T) {
		t.Parallel()

		ev := newEvent(t)
		b, err := json.Marshal(ev.Envelope())
		require.NoError(t, err)
		require.JSONEq(t, `{
			"event_id": "`+testEventID+`", "event_type": "topup.created", "payload_version": 1,
			"aggregate_type": "topup_order", "aggregate_id": "42",
			"resource_type": "wallet", "resource_id": "w-7", "business_key": "TP20300102-0001",
			"request_id": "req-1", "correlation_id": "corr-1",
			"occurred_at": "2030-01-02T03:04:05Z",
			"payload": {"order_id": "42", "amount": 1000}
		}`, string(b))
	})

	t.Run("OmitsEmptyBusinessKey", func(t *testing.T) {
		t.Parallel()

		ev := newEvent(t)
		ev.BusinessKey = ""
		b, err := json.Marshal(ev.Envelope())
		require.NoError(t, err)
		require.NotContains(t, string(b), "business_key")
	})

	t.Run("CopiesPayload", func(t *testing.T) {
		t.Parallel()

		ev := newEvent(t)
		env := ev.Envelope()
		env.Payload[0] = 'X'
		require.Equal(t, byte('{'), ev.Payload[0])
	})

	t.Run("RoundTrip", func(t *testing.T) {
		t.Parallel()

		ev := newEvent(t)
		b, err := json.Marshal(ev.Envelope())
		require.NoError(t, err)
		env, err := outbox.DecodeEnvelope(b)
		require.NoError(t, err)
		require.Equal(t, ev.EventID, env.EventID)
		require.Equal(t, ev.RequestID, env.RequestID)
		require.Equal(t, ev.CorrelationID, env.CorrelationID)
		require.True(t, ev.CreatedAt.Equal(env.OccurredAt))

		var got topupCreated
		require.NoError(t, env.Decode(&got))
		require.Equal(t, topupCreated{OrderID: "42", Amount: 1000}, got)
	})
}

func TestDecodeEnvelope(t *testing.T) {
	t.Parallel()

	payload := `{"order_id":"42","amount":1000}`
	doubled, err := json.Marshal(payload) // a JSON string holding the object
	require.NoError(t, err)
	b64, err := json.Marshal([]byte(payload)) // the Base64 regression: bytes marshalled again
	require.NoError(t, err)
	require.Equal(t, `"`+base64.StdEncoding.EncodeToString([]byte(payload))+`"`, string(b64))

	envelope := func(edit func(m map[string]any)) []byte {
		m := map[string]any{
			"event_id": testEventID, "event_type": "topup.created", "payload_version": 1,
			"aggregate_type": "topup_order", "aggregate_id": "42", "resource_type": "wallet",
			"resource_id": "w-7", "request_id": "req-1", "correlation_id": "corr-1",
			"occurred_at": "2030-01-02T03:04:05Z", "payload": json.RawMessage(payload),
			"added_later": true,
		}
		edit(m)
		b, err := json.Marshal(m)
		require.NoError(t, err)
		return b
	}

	tests := []struct {
		name  string
		data  []byte
		field string // "" means no error expected
	}{
		{"Valid", envelope(func(map[string]any) {}), ""},
		{"PayloadWhitespace", envelope(func(m map[string]any) { m["payload"] = json.RawMessage(" \n{}") }), ""},
		{"PayloadJSONString", envelope(func(m map[string]any) { m["payload"] = json.RawMessage(doubled) }), "payload"},
		{"PayloadBase64", envelope(func(m map[string]any) { m["payload"] = json.RawMessage(b64) }), "payload"},
		{"PayloadArray", envelope(func(m map[string]any) { m["payload"] = json.RawMessage(`[{}]`) }), "payload"},
		{"PayloadNull", envelope(func(m map[string]any) { m["payload"] = nil }), "payload"},
		{"PayloadMissing", envelope(func(m map[string]any) { delete(m, "payload") }), "payload"},
		{"EventIDMissing", envelope(func(m map[string]any) { delete(m, "event_id") }), "event_id"},
		{"EventTypeBad", envelope(func(m map[string]any) { m["event_type"] = "TopupCreated" }), "event_type"},
		{"VersionZero", envelope(func(m map[string]any) { m["payload_version"] = 0 }), "payload_version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			env, err := outbox.DecodeEnvelope(tt.data)
			if tt.field == "" {
				require.NoError(t, err, "data %s", tt.data)
				require.Equal(t, testEventID, env.EventID)
				return
			}
			var ve *outbox.ValidationError
			require.ErrorAs(t, err, &ve, "data %s", tt.data)
			require.Equal(t, tt.field, ve.Field)
			if tt.field == "payload" {
				require.ErrorIs(t, err, outbox.ErrPayloadNotStructured)
			}
		})
	}

	t.Run("NotJSON", func(t *testing.T) {
		t.Parallel()

		_, err := outbox.DecodeEnvelope([]byte(`{"event_id":`))
		require.ErrorContains(t, err, "decode outbox envelope")
	})

	t.Run("WholeEnvelopeDoubleMarshalled", func(t *testing.T) {
		t.Parallel()

		inner := envelope(func(map[string]any) {})
		outer, err := json.Marshal(inner) // []byte -> Base64 string
		require.NoError(t, err)
		_, err = outbox.DecodeEnvelope(outer)
		require.Error(t, err, "data %s", outer)
	})
}

func TestEnvelopeDecode(t *testing.T) {
	t.Parallel()

	t.Run("RefusesStringPayload", func(t *testing.T) {
		t.Parallel()

		env := outbox.Envelope{Payload: json.RawMessage(`"eyJhIjoxfQ=="`)}
		var dst map[string]any
		require.ErrorIs(t, env.Decode(&dst), outbox.ErrPayloadNotStructured)
		require.Nil(t, dst)
	})

	t.Run("TypeMismatch", func(t *testing.T) {
		t.Parallel()

		env := outbox.Envelope{EventType: "topup.created", PayloadVersion: 2, EventID: testEventID, Payload: json.RawMessage(`{"amount":"ten"}`)}
		var dst topupCreated
		err := env.Decode(&dst)
		require.ErrorContains(t, err, "decode topup.created v2 payload of event "+testEventID)
		var te *json.UnmarshalTypeError
		require.ErrorAs(t, err, &te)
	})

	t.Run("Map", func(t *testing.T) {
		t.Parallel()

		env := outbox.Envelope{Payload: json.RawMessage(`{"a":1}`)}
		var dst map[string]int
		require.NoError(t, env.Decode(&dst))
		require.Equal(t, map[string]int{"a": 1}, dst)
	})
}

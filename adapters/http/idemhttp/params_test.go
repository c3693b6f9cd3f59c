package idemhttp_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/apiserver"
	"github.com/july/template/adapters/http/idemhttp"
	"github.com/july/template/core/ports"
)

// TestIdemPathParamsAreFingerprinted: on a route whose path names the
// resource, the same key and body sent for another card is another command
// (422), not a replay of the first card's answer (PRD §5: the fingerprint
// covers every field that changes the result).
func TestIdemPathParamsAreFingerprinted(t *testing.T) {
	t.Parallel()
	for _, guarded := range []bool{false, true} {
		var guard ports.Guard
		if guarded {
			guard = redisGuard(t)
		}
		a := newApp(t, appOpts{capture: true, route: "/cards/:card_id/status-changes", guard: guard})
		card := func(id string) string { return apiserver.Prefix + "/cards/" + id + "/status-changes" }

		first := a.postTo(t, card("card-a"), "user-1", createBody, "X-Request-ID", "status-req-0001")
		require.Equal(t, http.StatusCreated, first.Status, "body %s", first.Body)

		other := a.postTo(t, card("card-b"), "user-1", createBody, "X-Request-ID", "status-req-0001")
		require.Equal(t, http.StatusUnprocessableEntity, other.Status,
			"rule: the same key and body for another card is a reused key, not card-a's answer (guard %v); body %s", guarded, other.Body)
		require.Equal(t, idemhttp.CodeKeyReused, other.Error.Code)

		again := a.postTo(t, card("card-a"), "user-1", createBody, "X-Request-ID", "status-req-0001")
		require.Equal(t, http.StatusCreated, again.Status, "body %s", again.Body)
		require.Equal(t, "true", again.Header.Get(idemhttp.HeaderReplayed), "rule: a retry for the same card replays")
		require.Equal(t, first.Body, again.Body)
		require.EqualValues(t, 1, a.rows(t))
	}
}

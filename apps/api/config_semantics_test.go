package main

import (
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/apitest"
)

// Item 11: a PUT without version is unconditional, as documented: many at
// once all succeed (last writer wins) and each writes one version.
func TestConcurrentUnversionedPuts(t *testing.T) {
	t.Parallel()
	a := startAPI(t, appOpts{})
	adm := admin(t)
	const n = 16
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			res, err := a.send(apitest.Request{Method: "PUT", Path: configsPath + keyCount, Token: adm, Body: fmt.Sprintf(`{"value":%d}`, i%10+1)})
			if err == nil {
				statuses[i] = res.Status
			}
		})
	}
	wg.Wait()
	for i, s := range statuses {
		require.Equal(t, http.StatusOK, s, "unversioned PUT %d", i)
	}
	r, _ := a.row(t, keyCount)
	require.Equal(t, int64(n), r.Version, "each accepted PUT wrote one version")
	require.Len(t, a.audits(t, keyCount), n, "each accepted PUT was audited once")
}

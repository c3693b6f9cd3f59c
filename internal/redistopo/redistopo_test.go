package redistopo_test

import (
	"strings"
	"testing"

	"github.com/july/template/internal/redistopo"
)

// A topology is ready only when its replicas hold their masters' data:
// cluster_state:ok alone came back while every replica's link was still
// down, and a failover then promoted an empty replica (the cluster drain
// test lost exactly the writes made before it).
func TestReplicasAreInSyncWhenReady(t *testing.T) {
	for name, start := range map[string]func(testing.TB) *redistopo.Topology{
		"cluster": redistopo.Cluster, "sentinel": redistopo.Sentinel,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tp := start(t)
			replicas := 0
			for _, n := range tp.Nodes {
				out := redistopo.Do(t, n, "INFO", "replication")
				if !strings.Contains(out, "role:slave") {
					continue
				}
				replicas++
				if !strings.Contains(out, "master_link_status:up") {
					t.Errorf("replica %s is not linked to its master:\n%s", n, out)
				}
			}
			if want := len(tp.Nodes) / 2; replicas != want {
				t.Fatalf("%d replicas, want %d", replicas, want)
			}
		})
	}
}

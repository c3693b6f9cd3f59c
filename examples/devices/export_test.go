package devices

import "github.com/july/template/apps/domain"

// SetAfterChunk installs a hook that runs after each committed chunk with
// the rows decided so far; an error ends the run there, like a crash.
func SetAfterChunk(w *Worker, f func(done int64) error) { w.afterChunk = f }

// RelayWithAfterChunk is Domain().Relay with SetAfterChunk(f) on its
// worker.
func RelayWithAfterChunk(d domain.RelayDeps, f func(done int64) error) (domain.Relay, error) {
	return newRelayPart(d, f)
}

// SetConfig makes s read its upload quotas from r.
func SetConfig(s *Service, r ConfigReader) { s.config = r }

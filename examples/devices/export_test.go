package devices

// SetAfterChunk installs a hook that runs after each committed chunk with
// the rows decided so far; an error ends the run there, like a crash.
func SetAfterChunk(w *Worker, f func(done int64) error) { w.afterChunk = f }

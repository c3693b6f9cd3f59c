package sysconfig

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
)

// Registry is the code-side authority on which keys exist. It is safe for
// concurrent use; apps fill it at start-up and read it afterwards.
type Registry struct {
	mu    sync.RWMutex
	specs map[string]Spec
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{specs: make(map[string]Spec)}
}

// Register adds specs atomically: if any spec is invalid, duplicates a key
// (in the call or already registered) or clashes on type, nothing is
// registered and a *RegistrationError names the first offending key. A later
// registration never overrides an earlier one.
func (r *Registry) Register(specs ...Spec) error {
	r.mu.Lock()
	defer r.mu.Unlock()

	batch := make(map[string]Spec, len(specs))
	for _, s := range specs {
		if err := s.validate(); err != nil {
			return err
		}
		prev, ok := r.specs[s.Key]
		if !ok {
			prev, ok = batch[s.Key]
		}
		if ok && prev.Type != s.Type {
			return regErr(s.Key, ErrTypeClash, fmt.Sprintf("already registered as %s, now as %s", prev.Type, s.Type))
		}
		if ok {
			return regErr(s.Key, ErrDuplicateKey, "already registered by module "+prev.Module)
		}
		batch[s.Key] = s.clone()
	}
	for k, s := range batch {
		r.specs[k] = s
	}
	return nil
}

// MustRegister is Register for init-time wiring in apps/ only: it panics on
// error so a misdeclared key stops the binary before it serves. Library and
// core code must call Register and return the error.
func (r *Registry) MustRegister(specs ...Spec) {
	if err := r.Register(specs...); err != nil {
		panic(err)
	}
}

// Lookup returns the spec registered for key.
func (r *Registry) Lookup(key string) (Spec, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	s, ok := r.specs[key]
	if !ok {
		return Spec{}, false
	}
	return s.clone(), true
}

// List returns the specs of module sorted by key; an empty module lists all.
func (r *Registry) List(module string) []Spec {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []Spec
	for _, s := range r.specs {
		if module == "" || s.Module == module {
			out = append(out, s.clone())
		}
	}
	slices.SortFunc(out, func(a, b Spec) int { return cmp.Compare(a.Key, b.Key) })
	return out
}

// Modules returns the registered module names, sorted.
func (r *Registry) Modules() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []string
	for _, s := range r.specs {
		out = append(out, s.Module)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

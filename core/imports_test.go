// Package core_test guards the house rule that core/ stays pure.
package core_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCoreImportsOnlyStdlibAndCore fails when a non-test file under core/
// imports anything but the standard library or another core/ package.
func TestCoreImportsOnlyStdlibAndCore(t *testing.T) {
	t.Parallel()

	module := modulePath(t)
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			first := strings.SplitN(p, "/", 2)[0]
			stdlib := !strings.Contains(first, ".")
			inCore := p == module+"/core" || strings.HasPrefix(p, module+"/core/")
			require.True(t, stdlib || inCore,
				"core/%s imports %q: core may import only the standard library and %s/core/...; move the dependency behind a port in core/ports and implement it in adapters/", path, p, module)
		}
		return nil
	})
	require.NoError(t, err)
	require.Positive(t, checked, "no core source files found; is the test running in core/?")
}

func modulePath(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../go.mod")
	require.NoError(t, err)
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "module "); ok {
			return strings.TrimSpace(rest)
		}
	}
	t.Fatal("no module line in ../go.mod")
	return ""
}

package apitest_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const self = "github.com/july/template/adapters/http/apitest"

// TestImportedFromTestsOnly: test helpers never reach a binary.
func TestImportedFromTestsOnly(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "apitest") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == self {
				t.Errorf("%s imports %s: import it from _test.go files only (move the code into a test file or a helper of its own)", path, self)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

package layout_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Teams copy the domains, so every domain must have the right shape
// (docs/architecture.md, house rules): a transaction belongs to a use case
// (the domain's Service, a transaction script), and an HTTP handler only
// maps the request to a use case call and its result to a response.
//
// The rule, per non-test file of each domain (domainRoots):
//   - a file that imports echo (an HTTP adapter) opens no transaction and
//     runs no statement: no RunInTx, BeginTx, bun.Tx, bun.IDB, query
//     builder or write through the Postgres adapters;
//   - a file that opens a transaction imports neither echo nor the HTTP
//     adapters (adapters/http/...): a use case runs the same from a CLI,
//     a consumer or a test.
func TestHandlersLeaveTransactionsToUseCases(t *testing.T) {
	t.Parallel()
	bad, handlers, scripts := layerViolations(t, "../..")
	require.Empty(t, bad)
	require.Positive(t, handlers, "no domain file imports echo; is the test running in internal/layout?")
	require.Positive(t, scripts, "no domain file opens a transaction; is the test running in internal/layout?")
}

// layerViolations checks the rule above over the domains of the tree at
// root, and counts the handler files and the files that open a transaction.
func layerViolations(t *testing.T, root string) (bad []string, handlers, scripts int) {
	t.Helper()
	// Selectors that open a transaction or run a statement.
	dbCalls := []string{"RunInTx", "BeginTx", "NewSelect", "NewInsert", "NewUpdate", "NewDelete", "NewRaw",
		"ExecContext", "QueryContext", "QueryRowContext"}
	// Qualified names a handler has no business with.
	dbNames := []string{"bun.Tx", "bun.IDB", "pgidem.Insert", "pgidem.SaveResponse", "pgoutbox.Append"}
	const (
		echoPath = "github.com/labstack/echo/v4"
		httpPkgs = "/adapters/http/"
	)
	fset := token.NewFileSet()
	for _, dir := range domainRoots {
		if _, err := os.Stat(filepath.Join(root, dir)); os.IsNotExist(err) {
			continue // examples/ after make remove-examples
		}
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			rel = filepath.ToSlash(rel)
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			var imports []string
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				imports = append(imports, p)
			}
			var uses []string // "RunInTx at line 12"
			opensTx := false
			ast.Inspect(f, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				at := fset.Position(sel.Pos())
				if slices.Contains(dbCalls, sel.Sel.Name) {
					uses = append(uses, fmt.Sprintf("%s at line %d", sel.Sel.Name, at.Line))
					opensTx = opensTx || sel.Sel.Name == "RunInTx" || sel.Sel.Name == "BeginTx"
				}
				if x, ok := sel.X.(*ast.Ident); ok && slices.Contains(dbNames, x.Name+"."+sel.Sel.Name) {
					uses = append(uses, fmt.Sprintf("%s.%s at line %d", x.Name, sel.Sel.Name, at.Line))
				}
				return true
			})
			if slices.Contains(imports, echoPath) {
				handlers++
				if len(uses) > 0 {
					bad = append(bad, fmt.Sprintf("%s imports echo and reaches the database (%s): a handler maps HTTP to a use case call; "+
						"move the transaction and the statements into the domain's Service (see apps/internal/testdomain/service.go)", rel, strings.Join(uses, ", ")))
				}
			}
			if opensTx {
				scripts++
				for _, p := range imports {
					if p == echoPath || strings.Contains(p, httpPkgs) {
						bad = append(bad, fmt.Sprintf("%s opens a transaction and imports %q: a use case knows no HTTP; "+
							"take what it needs (the actor, the request id, the idempotency key) as arguments", rel, p))
					}
				}
			}
			return nil
		})
		require.NoError(t, err)
	}
	return bad, handlers, scripts
}

package examples_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Teams copy the examples, so the examples must have the right shape
// (docs/architecture.md, house rules): a transaction belongs to a use case (the domain's
// Service, a transaction script), and an HTTP handler only maps the
// request to a use case call and its result to a response.
//
// The rule, per non-test file of each example package:
//   - a file that imports echo (an HTTP adapter) opens no transaction and
//     runs no statement: no RunInTx, BeginTx, bun.Tx, bun.IDB, query
//     builder or write through the Postgres adapters;
//   - a file that opens a transaction imports neither echo nor the HTTP
//     adapters (adapters/http/...): a use case runs the same from a CLI,
//     a consumer or a test.
func TestExampleHandlersLeaveTransactionsToUseCases(t *testing.T) {
	t.Parallel()

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
	handlers, scripts := 0, 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || !strings.Contains(path, "/") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		var imports []string
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			imports = append(imports, p)
		}
		isHandler := slices.Contains(imports, echoPath)
		var uses []string // "RunInTx at api.go:12"
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
		if isHandler {
			handlers++
			require.Empty(t, uses,
				"examples/%s imports echo and reaches the database (%s): a handler maps HTTP to a use case call; "+
					"move the transaction and the statements into the domain's Service (see examples/topup/create.go)", path, strings.Join(uses, ", "))
		}
		if opensTx {
			scripts++
			for _, p := range imports {
				require.False(t, p == echoPath || strings.Contains(p, httpPkgs),
					"examples/%s opens a transaction and imports %q: a use case knows no HTTP; "+
						"take what it needs (the actor, the request id, the idempotency key) as arguments", path, p)
			}
		}
		return nil
	})
	require.NoError(t, err)
	require.Positive(t, handlers, "no example file imports echo; is the test running in examples/?")
	require.Positive(t, scripts, "no example file opens a transaction; is the test running in examples/?")
}

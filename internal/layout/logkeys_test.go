package layout_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// errorKey is the one key a log line carries an error under
// (redaction.ErrorKey): the apps' root handler redacts what it holds, and
// an operator's query for failures needs one field, not err, cause and
// error by turns.
const errorKey = "error"

// strayErrorKeys are keys that hold an error in some logs and never may.
var strayErrorKeys = map[string]bool{"err": true, "cause": true, "errors": true, "error_message": true, "error_msg": true, "exception": true}

// logMethods are the slog.Logger methods (and the package functions of
// the same names) and the index of their first attribute argument.
var logMethods = map[string]int{
	"Debug": 1, "Info": 1, "Warn": 1, "Error": 1,
	"DebugContext": 2, "InfoContext": 2, "WarnContext": 2, "ErrorContext": 2,
	"Log": 3, "LogAttrs": 3,
}

// attrFuncs are slog's attribute constructors, whose first argument is
// the key.
var attrFuncs = map[string]bool{
	"String": true, "Any": true, "Int": true, "Int64": true, "Uint64": true, "Float64": true,
	"Bool": true, "Time": true, "Duration": true, "Group": true,
}

// Every production file logs an error under "error" and nothing else: a
// log call's (or slog attribute's, or []any attribute list's) literal key
// is never err, cause, ..., and a value that is an error (err, werr,
// res.Err, x.Error(), ...) sits under "error".
func TestErrorsAreLoggedUnderOneKey(t *testing.T) {
	t.Parallel()
	root := "../.."
	fset := token.NewFileSet()
	var bad []string
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		check := func(key, value ast.Expr) {
			lit, ok := key.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return
			}
			k, _ := strconv.Unquote(lit.Value)
			if strayErrorKeys[k] || (k != errorKey && value != nil && mentionsError(value)) {
				pos := fset.Position(lit.Pos())
				rel, _ := filepath.Rel(root, pos.Filename)
				bad = append(bad, filepath.ToSlash(rel)+":"+strconv.Itoa(pos.Line)+": key "+strconv.Quote(k))
			}
		}
		pairs := func(args []ast.Expr) {
			for i := 0; i < len(args); i++ {
				if lit, ok := args[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					var v ast.Expr
					if i+1 < len(args) {
						v = args[i+1]
					}
					check(lit, v)
					i++
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				sel, ok := n.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "slog" && attrFuncs[sel.Sel.Name] && len(n.Args) > 0 {
					var v ast.Expr
					if len(n.Args) > 1 && sel.Sel.Name != "Group" {
						v = n.Args[1]
					}
					check(n.Args[0], v)
				} else if first, ok := logMethods[sel.Sel.Name]; ok && len(n.Args) > first {
					pairs(n.Args[first:])
				}
			case *ast.CompositeLit: // attrs := []any{"error", ...}
				if arr, ok := n.Type.(*ast.ArrayType); ok {
					if id, ok := arr.Elt.(*ast.Ident); ok && id.Name == "any" {
						pairs(n.Elts)
					}
				}
			}
			return true
		})
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, files, 100, "no source files found; is the test running in internal/layout?")
	require.Empty(t, bad, "log errors under the key %q (the root handler redacts it; docs/monitoring.md, \"Logs\"), never another key", errorKey)
}

// mentionsError reports whether expr reads an error: an identifier err
// or ending in err/Err (werr, lastErr), a field Err, or a call x.Error().
func mentionsError(expr ast.Expr) bool {
	found := false
	ast.Inspect(expr, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Ident:
			found = found || n.Name == "err" || strings.HasSuffix(n.Name, "Err") || (len(n.Name) <= 5 && strings.HasSuffix(n.Name, "err"))
		case *ast.SelectorExpr:
			found = found || n.Sel.Name == "Err"
			if !found {
				ast.Inspect(n.X, func(m ast.Node) bool {
					if id, ok := m.(*ast.Ident); ok {
						found = found || id.Name == "err" || strings.HasSuffix(id.Name, "Err") || (len(id.Name) <= 5 && strings.HasSuffix(id.Name, "err"))
					}
					return !found
				})
			}
			return false // a package or field name after the dot is not a value
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Error" && len(n.Args) == 0 {
				found = true
			}
		}
		return !found
	})
	return found
}

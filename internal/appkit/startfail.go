package appkit

import (
	"errors"
	"io"
	"log/slog"
	"syscall"

	"github.com/july/template/core/redaction"
)

// DependencyError is a failure to reach a dependency that says, in
// sentences, what went wrong and what to do (postgres.OpenError is one).
type DependencyError interface {
	error
	// Dependency names it: "postgres".
	Dependency() string
	// Variable names the environment variable that configures it.
	Variable() string
	// Fix says what to do.
	Fix() string
}

// LogStartFailure writes why a binary did not start (or stop) as one JSON
// line on w, like every other log line, so a log pipeline (or `make run`)
// sees it. The cause goes through the text redactor, which keeps a
// configuration error's variable names (the logger's whole-value rule would
// hide "AUTH_JWT_SECRET: is required" entirely). addrVar names the variable
// of the address the binary listens on; when the cause is an address in
// use the line says which variable moves it. When the cause is a
// DependencyError the line has its dependency, variable, error and hint
// (fix), and nothing of the wiring that led to it.
func LogStartFailure(w io.Writer, msg string, err error, addrVar string) {
	red := &redaction.Redactor{}
	attrs := []any{"error", red.RedactText(err.Error())}
	var dep DependencyError
	if errors.As(err, &dep) {
		attrs = []any{"dependency", dep.Dependency(), "variable", dep.Variable(),
			"error", red.RedactText(dep.Error()), "hint", red.RedactText(dep.Fix())}
	} else if addrVar != "" && errors.Is(err, syscall.EADDRINUSE) {
		attrs = append(attrs, "hint", "another process already listens on "+addrVar+
			": stop it, or set "+addrVar+" to a free address (e.g. "+addrVar+"=127.0.0.1:18080)")
	}
	h := slog.NewJSONHandler(w, &slog.HandlerOptions{ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) == 0 && a.Key == "error" {
			return a // redacted above, word by word
		}
		return redaction.ReplaceAttr(groups, a)
	}})
	slog.New(h).Error(msg, attrs...)
}

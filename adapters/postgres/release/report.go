package release

// Severity says whether a Finding blocks the release.
type Severity string

// Severities.
const (
	// SeverityViolation blocks the release (non-zero exit).
	SeverityViolation Severity = "violation"
	// SeverityWarning is reported for the operator but does not block.
	SeverityWarning Severity = "warning"
)

// Finding is one result of a check. Object is a safe identifier (migration
// version, table, column, constraint or index name); values never appear.
type Finding struct {
	Severity Severity `json:"severity"`
	Code     string   `json:"code"`
	Object   string   `json:"object,omitempty"`
	Count    int64    `json:"count"`
	Message  string   `json:"message"`
}

// Report is the outcome of Check or Verify.
type Report struct {
	Phase         string    `json:"phase"`
	ServerVersion int       `json:"server_version"`
	Applied       []string  `json:"applied"`
	Pending       []string  `json:"pending"`
	Findings      []Finding `json:"findings"`
}

// OK reports whether r holds no violation.
func (r *Report) OK() bool { return r.Violations() == 0 }

// Violations counts the blocking findings.
func (r *Report) Violations() int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity == SeverityViolation {
			n++
		}
	}
	return n
}

func (r *Report) add(sev Severity, code, object string, count int64, msg string) {
	r.Findings = append(r.Findings, Finding{Severity: sev, Code: code, Object: object, Count: count, Message: msg})
}

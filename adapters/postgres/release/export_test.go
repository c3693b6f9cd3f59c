package release

// CheckServerVersion reports what Check says of a server whose
// server_version_num is n (a test cannot run an older Postgres).
func CheckServerVersion(n int) *Report {
	r := &Report{ServerVersion: n}
	checkServerVersion(r)
	return r
}

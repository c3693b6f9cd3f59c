package containers

import (
	"fmt"
	"os"

	"github.com/july/template/contracttests/testinfra"
)

// Run is for TestMain: it installs a testinfra.Starter that starts a
// container the first time a test asks for a server whose variable is unset,
// runs the tests, then removes the containers. A set variable still wins.
//
//	func TestMain(m *testing.M) { os.Exit(containers.Run(m)) }
func Run(m interface{ Run() int }) int {
	s, err := New()
	if err != nil {
		// Only tests that need a server fail, each with testinfra's message
		// and this cause.
		testinfra.SetStarter(func(string) (string, error) { return "", err })
		return m.Run()
	}
	testinfra.SetStarter(s.Start)
	code := m.Run()
	if err := s.Purge(); err != nil {
		fmt.Fprintln(os.Stderr, "containers:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

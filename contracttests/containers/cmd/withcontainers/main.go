// Command withcontainers starts Postgres and Redis containers (dockertest),
// runs a command with TEST_DATABASE_URL and TEST_REDIS_URL pointing at them,
// and removes the containers when the command ends, whatever its outcome:
//
//	withcontainers go test -race -count=1 ./adapters/...
//
// Its exit status is the command's. Ctrl-C and SIGTERM go to the command;
// the containers are removed after it exits.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/july/template/contracttests/containers"
	"github.com/july/template/contracttests/testinfra"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: withcontainers CMD [ARG...]")
		return 2
	}
	for _, v := range []string{testinfra.EnvDatabaseURL, testinfra.EnvRedisURL} {
		if os.Getenv(v) != "" {
			fmt.Fprintf(os.Stderr, "withcontainers: %s is set; unset it so the command runs against containers (env -u %s)\n", v, v)
			return 2
		}
	}
	s, err := containers.New()
	if err != nil {
		fmt.Fprintln(os.Stderr, "withcontainers:", err)
		return 1
	}
	// Signals are caught before the first container starts, so Ctrl-C
	// during startup still removes what started.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer func() {
		if err := s.Purge(); err != nil {
			fmt.Fprintln(os.Stderr, "withcontainers:", err)
		}
	}()

	pg, err := s.Postgres()
	if err != nil {
		fmt.Fprintln(os.Stderr, "withcontainers:", err)
		return 1
	}
	rd, err := s.Redis()
	if err != nil {
		fmt.Fprintln(os.Stderr, "withcontainers:", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "withcontainers: %s=%s %s=%s\n", testinfra.EnvDatabaseURL, pg, testinfra.EnvRedisURL, rd)

	select {
	case <-sig:
		return 130 // interrupted while the containers started
	default:
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), testinfra.EnvDatabaseURL+"="+pg, testinfra.EnvRedisURL+"="+rd)
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "withcontainers:", err)
		return 1
	}
	go func() {
		for s := range sig {
			_ = cmd.Process.Signal(s)
		}
	}()
	err = cmd.Wait()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		if exit.ExitCode() < 0 {
			return 1 // killed by a signal
		}
		return exit.ExitCode()
	default:
		fmt.Fprintln(os.Stderr, "withcontainers:", err)
		return 1
	}
}
